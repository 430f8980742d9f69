// postbuild.mjs marks dist/cjs as CommonJS (the package is "type": "module").
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
writeFileSync(fileURLToPath(new URL("../dist/cjs/package.json", import.meta.url)), JSON.stringify({ type: "commonjs" }) + "\n");
