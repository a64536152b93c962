// duckdb_sql.cjs MODULE SQL - run SQL in DuckDB and print its rows as one
// JSON array on stdout; an error goes to stderr with exit status 1.
// MODULE is the directory of the npm package @duckdb/node-api, which
// scripts/deps.sh --test installs into .deps-node-test/ (DuckDB is not
// packaged for Debian 12; its npm package carries the engine itself).
// test_export.py uses it to read export streams the way DuckDB users do.
"use strict";
const { DuckDBInstance } = require(process.argv[2]);

(async () => {
    const db = await DuckDBInstance.create(":memory:");
    const con = await db.connect();
    const result = await con.runAndReadAll(process.argv[3]);
    process.stdout.write(JSON.stringify(result.getRowObjectsJson()) + "\n");
})().catch((e) => {
    process.stderr.write(String(e && e.message ? e.message : e) + "\n");
    process.exit(1);
});
