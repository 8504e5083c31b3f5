// Writes <id>.jsonl.deleted.<stamp>.zst with OpenClaw's own archive encoder
// (artifacts-*.mjs: encodeSessionArchiveContent, formatSessionArchiveTimestamp).
import fs from "node:fs";
import path from "node:path";
const dist = process.argv[2], src = process.argv[3], outDir = process.argv[4];
const file = fs.readdirSync(dist).find((f) => /^artifacts-.*\.mjs$/.test(f) && fs.readFileSync(path.join(dist, f), "utf8").includes("function encodeSessionArchiveContent"));
const m = await import(path.join(dist, file));
const fns = Object.values(m);
const encode = fns.find((f) => f.name === "encodeSessionArchiveContent");
const stamp = fns.find((f) => f.name === "formatSessionArchiveTimestamp");
const content = fs.readFileSync(src, "utf8");
const id = JSON.parse(content.split("\n")[0]).id;
const enc = encode(content);
const name = `${id}.jsonl.deleted.${stamp(Date.now())}${enc.suffix}`;
fs.writeFileSync(path.join(outDir, name), enc.bytes);
console.log(name);
