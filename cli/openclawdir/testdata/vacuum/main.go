// Command vacuum copies an SQLite database with VACUUM INTO, folding in its
// WAL, for regen.sh: OpenClaw's schema uses octet_length, which older
// sqlite3 shells do not know, so the copy is made with modernc.org/sqlite.
//
//	go run ./cli/openclawdir/testdata/vacuum SRC DST
package main

import (
	"database/sql"
	"fmt"
	"os"

	_ "modernc.org/sqlite"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: vacuum SRC DST")
		os.Exit(2)
	}
	db, err := sql.Open("sqlite", "file:"+os.Args[1]+"?mode=ro")
	if err == nil {
		_, err = db.Exec(`VACUUM INTO ?`, os.Args[2])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "vacuum:", err)
		os.Exit(1)
	}
}
