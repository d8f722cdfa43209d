// Fails when src/generated/schema.ts differs from a fresh generation from ../../openapi/openapi.json
// (with the options of `npm run generate`, read from package.json so the two cannot drift apart).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const committed = join(root, "src", "generated", "schema.ts");
const generate = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).scripts.generate;
const args = generate.split(/\s+/);
const output = args.indexOf("--output");
if (args[0] !== "openapi-typescript" || output < 0) {
  console.error("check-generated: the generate script is not `openapi-typescript ... --output FILE`");
  process.exit(2);
}
const work = mkdtempSync(join(tmpdir(), "agentd-ts-schema-"));
try {
  const fresh = join(work, "schema.ts");
  args[output + 1] = fresh;
  const bin = join(root, "node_modules", ".bin", "openapi-typescript");
  try {
    execFileSync(bin, args.slice(1), { cwd: root, stdio: ["ignore", "ignore", "pipe"] });
  } catch (error) {
    console.error(String(error.stderr ?? error));
    console.error("check-generated: openapi-typescript failed");
    process.exit(2);
  }
  let current = "";
  try {
    current = readFileSync(committed, "utf8");
  } catch {
    // A missing file is stale too.
  }
  if (readFileSync(fresh, "utf8") !== current) {
    console.error("src/generated/schema.ts is stale: run npm run generate");
    process.exit(1);
  }
  console.log("src/generated/schema.ts is up to date with openapi/openapi.json");
} finally {
  rmSync(work, { recursive: true, force: true });
}
