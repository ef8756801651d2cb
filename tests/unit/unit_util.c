#include "unit_util.h"
