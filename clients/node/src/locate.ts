import { accessSync, constants } from "node:fs";
import { delimiter, isAbsolute, join } from "node:path";

/** The wavebox program: the one given, else $WAVEBOX_BIN, else `wavebox` on PATH. */
export function findWavebox(explicit?: string): string {
  const named = explicit ?? process.env.WAVEBOX_BIN;
  if (named) {
    if (!isAbsolute(named) && named.includes("/")) return join(process.cwd(), named);
    if (named.includes("/")) return named;
  }
  const name = named ?? "wavebox";
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const p = join(dir, name);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // not here
    }
  }
  throw new Error(`wavebox: the program "${name}" was not found on PATH (set WAVEBOX_BIN or pass its path)`);
}

/** POSIX single quotes. */
export function shQuote(s: string): string {
  return "'" + s.replace(/'/g, "'\\''") + "'";
}
