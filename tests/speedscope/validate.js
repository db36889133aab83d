// Validates speedscope files written by `flightrec-analyze flame --format
// speedscope` against the schema speedscope publishes
// (node_modules/speedscope/dist/release/file-format-schema.json, the
// package's own copy), plus what its importer checks beyond the schema
// (src/lib/file-format.ts: as many weights as samples, frame indices in
// range).  Prints one JSON line per file: {file, profiles: [{name, unit,
// total, stacks: [[frame names root first], weight]...}]}.  Exit 1 on the
// first invalid file, 77 when node_modules is missing.
'use strict';
const fs = require('fs');
const path = require('path');
const here = __dirname;
const schemaPath = path.join(here, 'node_modules/speedscope/dist/release/file-format-schema.json');
if (!fs.existsSync(schemaPath) || !fs.existsSync(path.join(here, 'node_modules/ajv'))) {
	console.error('validate.js: SKIP: run `npm ci` in tests/speedscope first');
	process.exit(77);
}
const Ajv = require('ajv');
const ajv = new Ajv({ allErrors: true, strict: false });
const validate = ajv.compile(JSON.parse(fs.readFileSync(schemaPath, 'utf8')));
for (const file of process.argv.slice(2)) {
	const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
	if (!validate(doc)) {
		console.error(`${file}: not a speedscope file: ${ajv.errorsText(validate.errors)}`);
		process.exit(1);
	}
	const frames = doc.shared.frames;
	const out = { file, profiles: [] };
	for (const p of doc.profiles) {
		if (p.type !== 'sampled' || p.samples.length !== p.weights.length) {
			console.error(`${file}: profile ${p.name}: ${p.samples.length} samples, ${p.weights.length} weights`);
			process.exit(1);
		}
		let total = 0;
		const stacks = [];
		p.samples.forEach((s, i) => {
			for (const f of s)
				if (!Number.isInteger(f) || f < 0 || f >= frames.length) {
					console.error(`${file}: profile ${p.name}: frame ${f} of ${frames.length}`);
					process.exit(1);
				}
			total += p.weights[i];
			stacks.push([s.map(f => frames[f].name), p.weights[i]]);
		});
		if (total !== p.endValue - p.startValue) {
			console.error(`${file}: profile ${p.name}: weights sum to ${total}, endValue ${p.endValue}`);
			process.exit(1);
		}
		out.profiles.push({ name: p.name, unit: p.unit, total, stacks });
	}
	console.log(JSON.stringify(out));
}
