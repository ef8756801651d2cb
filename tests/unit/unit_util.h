/*
** unit_util.h - helpers shared by the Check suites (temporary directories,
** seeded randomness).  Filled in by the unit-test work.
*/
#ifndef UNIT_UTIL_H
#define UNIT_UTIL_H
#endif
