// The ES module entry: the same two functions as index.cjs, which holds them.
import colstore from './index.cjs';

export const getLoadablePath = colstore.getLoadablePath;
export const load = colstore.load;
export default colstore;
