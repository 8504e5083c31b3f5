package bolt

import (
	"strings"
	"testing"
	"time"
)

type record struct {
	Until   time.Time `json:"until"`
	Reason  string    `json:"reason"`
	Strikes int       `json:"strikes"`
}

func TestJSONRecordsSurviveReopen(t *testing.T) {
	db, path := openTemp(t)
	until := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	want := record{Until: until, Reason: "billing", Strikes: 2}

	var got record
	if ok, err := db.GetJSON(BucketCooldowns, "profile:openai@work", &got); ok || err != nil {
		t.Fatalf("before any write: %v, %v", ok, err)
	}
	if err := db.PutJSON(BucketCooldowns, "profile:openai@work", record{Reason: "auth"}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutJSON(BucketCooldowns, "profile:openai@work", want); err != nil { // overwrites
		t.Fatal(err)
	}
	if err := db.PutJSON("other", "k", 42); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ok, err := db.GetJSON(BucketCooldowns, "profile:openai@work", &got)
	if !ok || err != nil || !got.Until.Equal(want.Until) || got.Reason != want.Reason || got.Strikes != want.Strikes {
		t.Errorf("after reopen: %+v, %v, %v; want %+v", got, ok, err, want)
	}
	var n int
	if ok, err := db.GetJSON("other", "k", &n); !ok || err != nil || n != 42 {
		t.Errorf("other bucket: %d, %v, %v", n, ok, err)
	}
	if ok, err := db.GetJSON("missing-bucket", "k", &n); ok || err != nil {
		t.Errorf("missing bucket: %v, %v", ok, err)
	}

	if err := db.DeleteJSON(BucketCooldowns, "profile:openai@work"); err != nil {
		t.Fatal(err)
	}
	if ok, err := db.GetJSON(BucketCooldowns, "profile:openai@work", &got); ok || err != nil {
		t.Errorf("after delete: %v, %v", ok, err)
	}
	if err := db.DeleteJSON("missing-bucket", "k"); err != nil {
		t.Errorf("delete from a missing bucket: %v", err)
	}
}

func TestJSONRecordErrors(t *testing.T) {
	db, _ := openTemp(t)
	if err := db.PutJSON("b", "bad", 1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"emptyBucket", db.PutJSON("", "k", 1), `write /k: bucket name is empty`},
		{"emptyKey", db.PutJSON("b", "", 1), `write b/: key is empty`},
		{"longKey", db.PutJSON("b", strings.Repeat("k", maxRecordKey+1), 1), `key is longer than 32768 bytes`},
		{"sessions", db.PutJSON("sessions", "k", 1), `write sessions/k: bucket "sessions" is the session store's own and holds no JSON records`},
		{"transcripts", db.PutJSON("transcripts", "k", 1), `bucket "transcripts" is the session store's own`},
		{"dedup", func() error { _, err := db.GetJSON("dedup", "k", new(int)); return err }(), `read dedup/k: bucket "dedup" is the session store's own`},
		{"deleteOwn", db.DeleteJSON("sessions", "k"), `delete sessions/k: bucket "sessions" is the session store's own`},
		{"unencodable", db.PutJSON("b", "k", func() {}), `write b/k: json: unsupported type: func()`},
		{"tooLarge", db.PutJSON("b", "k", strings.Repeat("x", maxRecordValue)), `write b/k: record of 1048578 bytes is larger than 1048576`},
		{"wrongType", func() error { _, err := db.GetJSON("b", "bad", new(string)); return err }(), `read b/bad: json: cannot unmarshal number into Go value of type string`},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, tc.err, tc.want)
		}
	}
	var n int
	if ok, err := db.GetJSON("b", "k", &n); ok || err != nil {
		t.Errorf("a refused write left a record: %v, %v", ok, err)
	}
}
