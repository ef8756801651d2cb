/** The path of the bundled colstore module, without its suffix, as loadExtension takes it. */
export function getLoadablePath(): string;

/** Loads colstore into a better-sqlite3 Database (or any object with loadExtension(path)). */
export function load(db: {loadExtension(path: string, entryPoint?: string): unknown}): void;

declare const colstore: {getLoadablePath: typeof getLoadablePath; load: typeof load};
export default colstore;
