package s3store

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/matryer/is"
)

func TestOnlyAnS3URLOfABucketAndPlainNamesIsAStore(t *testing.T) {
	tests := []struct {
		url, bucket, prefix string
		ok                  bool
	}{
		{"s3://evidence", "evidence", "", true},
		{"s3://evidence/", "evidence", "", true},
		{"s3://evidence/team/runs", "evidence", "team/runs/", true},
		{"s3://evidence/team/runs/", "evidence", "team/runs/", true},
		{"s3://my.bucket-1/a", "my.bucket-1", "a/", true},
		{"s3://ev", "", "", false},                         // too short
		{"s3://" + strings.Repeat("b", 64), "", "", false}, // too long
		{"s3://Evidence/a", "", "", false},                 // uppercase
		{"s3://-evidence/a", "", "", false},
		{"s3://evidence-/a", "", "", false},
		{"s3://evi_dence/a", "", "", false},
		{"S3://evidence/a", "", "", false},
		{"s3:/evidence/a", "", "", false},
		{"https://evidence/a", "", "", false},
		{"/evidence/a", "", "", false},
		{"evidence/a", "", "", false},
		{"s3://", "", "", false},
		{"s3:///a", "", "", false},
		{"s3://evidence//a", "", "", false},
		{"s3://evidence/a//b", "", "", false},
		{"s3://evidence/a/../b", "", "", false},
		{"s3://evidence/./a", "", "", false},
		{"s3://evidence/a/..", "", "", false},
		{"s3://evidence/a\\b", "", "", false},
		{"s3://evidence/a\nb", "", "", false},
		{"s3://evidence/a\x7fb", "", "", false},
		{"s3://user@evidence/a", "", "", false},
		{"s3://evidence:9000/a", "", "", false},
		{"s3://evidence/a?versionId=1", "", "", false}, // not a query: refused rather than taken for a name
		{"s3://evidence/a#b", "", "", false},
		{"s3://evidence/a%2Fb", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			is := is.New(t)
			bucket, prefix, err := ParseURL(tt.url)
			is.Equal(err == nil, tt.ok)
			is.Equal(bucket, tt.bucket)
			is.Equal(prefix, tt.prefix)
		})
	}
}

func TestOnlyTwentyDigitsAndJSONNameARecord(t *testing.T) {
	tests := []struct {
		name string
		seq  uint64
		ok   bool
	}{
		{"00000000000000000001.json", 1, true},
		{"00000000000000000042.json", 42, true},
		{"09223372036854775807.json", 9223372036854775807, true}, // the largest seq a record carries
		{"09223372036854775808.json", 0, false},
		{"18446744073709551616.json", 0, false},
		{"00000000000000000000.json", 0, false}, // seqs start at 1
		{"0000000000000000001.json", 0, false},  // 19 digits
		{"000000000000000000001.json", 0, false},
		{"00000000000000000001.json.bak", 0, false},
		{"00000000000000000001", 0, false},
		{"0000000000000000000a.json", 0, false},
		{"+0000000000000000001.json", 0, false},
		{"notes.txt", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			seq, ok := parseSeq(tt.name)
			is.Equal(ok, tt.ok)
			is.Equal(seq, tt.seq)
			if ok {
				is.Equal(recordKey("p/", seq), "p/"+tt.name) // the key it came from
			}
		})
	}
}

// FuzzCommitObject: whatever bytes sit at a run's name, a commit is
// accepted only when it names the run, an attempt this package makes and
// distinct plain file names, so no key read on its word leaves the output
// directory's attempts; and an accepted commit encodes back to one that
// reads the same.
func FuzzCommitObject(f *testing.F) {
	good, _ := json.Marshal(commit{Format: commitFormat, RunID: "r1", Attempt: "0123456789abcdef01234567", Files: []file{{"result.json", 10}, {"receipt.json", 2}}})
	f.Add(good, "r1")
	f.Add(good, "r2")
	f.Add([]byte(`{"format":"metricproof.commit/1","run_id":"r1","attempt":"0123456789ABCDEF01234567","files":[]}`), "r1")
	f.Add([]byte(`{"format":"metricproof.commit/1","run_id":"r1","attempt":"0123456789abcdef01234567","files":[{"name":"..","bytes":1}]}`), "r1")
	f.Add([]byte(`{"format":"metricproof.commit/1","run_id":"r1","attempt":"0123456789abcdef01234567","files":null,"files":[]}`), "r1")
	f.Fuzz(func(t *testing.T, data []byte, runID string) {
		c, ok := parseCommit(data, runID)
		if !ok {
			return
		}
		if c.RunID != runID || c.Format != commitFormat || !validAttempt(c.Attempt) || strings.ContainsAny(c.Attempt, "/.") {
			t.Fatalf("accepted %+v", c)
		}
		seen := map[string]bool{}
		for _, f := range c.Files {
			if !validName(f.Name) || strings.Contains(f.Name, "/") || f.Name == ".." || seen[f.Name] || f.Bytes < 0 || !utf8.ValidString(f.Name) {
				t.Fatalf("accepted file %+v", f)
			}
			seen[f.Name] = true
		}
		again, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if back, ok := parseCommit(again, runID); !ok || len(back.Files) != len(c.Files) || back.Attempt != c.Attempt {
			t.Fatalf("%s does not read back", again)
		}
	})
}

// FuzzParseURL: an accepted URL names a valid bucket and a prefix of
// plain names ending in a slash, and writing them back gives the same.
func FuzzParseURL(f *testing.F) {
	for _, u := range []string{"s3://evidence", "s3://evidence/a/b/", "s3://e.v-1/a\x00", "s3://evidence/a/../b"} {
		f.Add(u)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		bucket, prefix, err := ParseURL(raw)
		if err != nil {
			return
		}
		if !validBucket(bucket) || prefix != "" && (!strings.HasSuffix(prefix, "/") || !validPath(strings.TrimSuffix(prefix, "/"))) {
			t.Fatalf("%q accepted as %q %q", raw, bucket, prefix)
		}
		b2, p2, err := ParseURL("s3://" + bucket + "/" + prefix)
		if err != nil || b2 != bucket || p2 != prefix {
			t.Fatalf("%q does not read back", raw)
		}
	})
}
