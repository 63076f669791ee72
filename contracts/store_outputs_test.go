package contracts_test

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/s3store/s3test"
)

// TestEveryDocumentTheProgramWritesInABucketValidates runs the real
// program in this process with its output directory and ledger in a
// bucket of a real S3 server (versitygw; skipped without it, as
// s3test says): every answer (a run's artifacts as the URLs of its
// objects, a store that did not answer as a retryable error), every
// object of a run, every ledger record and the ledger report validate
// against their schemas, as written and as the MCP server derives them.
func TestEveryDocumentTheProgramWritesInABucketValidates(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	srv.Bucket(t, "evidence", 0)
	srv.RootEnv(t)
	r := newRunner(t)
	v := compileAll(t, loadSchemas(t))
	ws := r.workspace("fixture", nil)
	digest := r.digestOf(ws)
	signing, trusted := r.keys("operator")
	base := []string{"--workspace", ws, "--output-dir", "s3://evidence/team/runs", "--ledger", "s3://evidence/team/ledger"}
	with := func(extra ...string) []string { return append(append([]string{}, base...), extra...) }
	steps := []struct {
		name, stdin string
		args        []string
		code        string
		run         bool
	}{
		{"inspect", inspectRequest("i1"), base, "", false},
		{"analyze", analyzeRequest("r1", digest), base, "", true},
		{"signed analyze", analyzeRequest("s1", digest), with("--signing-key", signing), "", true},
		{"verify", verifyRequest("v1", "r1"), base, "", false},
		{"verify a signed run", verifyRequest("v2", "s1"), with("--trusted-key", trusted), "", false},
		{"collision", analyzeRequest("r1", digest), base, "OUTPUT_COLLISION", false},
		{"verify an unknown run", verifyRequest("v3", "nope"), base, "MISSING_RESULT", false},
		{"a malformed URL", inspectRequest("i2"), []string{"--workspace", ws, "--output-dir", "s3://Evidence"}, "INVALID_OPTIONS", false},
		{"a bucket that does not exist", verifyRequest("v4", "r1"), []string{"--workspace", ws, "--output-dir", "s3://no-such-bucket/runs"}, "INVALID_OUTPUT", false},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			is := is.New(t)
			r := r.with(t)
			a := r.call(st.stdin, st.args...)
			is.Equal(a.code(), st.code)
			r.checkAnswer(v, a)
			if !st.run {
				return
			}
			arts := a.resp["artifacts"].(map[string]any)
			schemaOf := map[string]string{"result": "analyze-result", "receipt": "receipt", "checksums": "checksums", "attestation": "attestation"}
			for name, url := range arts {
				key, ok := strings.CutPrefix(url.(string), "s3://evidence/")
				is.True(ok)
				out, err := srv.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("evidence"), Key: &key})
				is.NoErr(err)
				data, err := io.ReadAll(out.Body)
				out.Body.Close()
				is.NoErr(err)
				if err := v.validate(schemaOf[name], data); err != nil {
					t.Errorf("%s of %s\n%v", name, a.line, err)
				}
			}
		})
	}
	t.Run("a store that does not answer", func(t *testing.T) {
		is := is.New(t)
		r := r.with(t)
		t.Setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1")
		a := r.call(verifyRequest("v5", "r1"), base...)
		is.Equal(a.code(), "IO_OR_NUMERIC_ERROR")
		is.Equal(a.resp["error"].(map[string]any)["retryable"], true)
		r.checkAnswer(v, a)
	})

	is := is.New(t)
	pages := s3.NewListObjectsV2Paginator(srv.Client(), &s3.ListObjectsV2Input{Bucket: aws.String("evidence"), Prefix: aws.String("team/ledger/")})
	records := 0
	for pages.HasMorePages() {
		page, err := pages.NextPage(context.Background())
		is.NoErr(err)
		for _, o := range page.Contents {
			out, err := srv.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("evidence"), Key: o.Key})
			is.NoErr(err)
			line, err := io.ReadAll(out.Body)
			out.Body.Close()
			is.NoErr(err)
			if err := v.validate("ledger-record", line); err != nil {
				t.Errorf("record %s\n%v", line, err)
			}
			r.noAbsolutePath("ledger record", line)
			records++
		}
	}
	is.True(records >= 7) // the tool calls were recorded
	report, exit := r.ledger("--workspace", ws, "--ledger", "s3://evidence/team/ledger")
	is.Equal(exit, 0)
	var got map[string]any
	is.NoErr(json.Unmarshal(report, &got))
	is.Equal(got["records"], float64(records))
	if err := v.validate("ledger-report", report); err != nil {
		t.Errorf("ledger report %s\n%v", report, err)
	}
}
