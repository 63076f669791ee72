//go:build unix

package main

// End-to-end tests of evidence and the ledger in object storage (protocol
// §15): the real runner (this test binary, installed by TestMain) as
// one-shot processes and MCP servers, against a real S3 server (versitygw,
// started by each test through adapters/s3store/s3test; the tests skip
// without it, and fail when METRICPROOF_REQUIRE_S3=1). The runners reach
// the server through the standard AWS environment the test sets, which
// they inherit.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/matryer/is"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metricproof/metricproof/adapters/s3store/s3test"
	"github.com/metricproof/metricproof/internal/testutil"
)

// store is a running S3 server with one bucket, which the runners the
// test starts reach through the environment it sets.
type store struct {
	t      *testing.T
	srv    *s3test.Server
	bucket string
}

// startStore starts versitygw with the bucket "evidence" (with Object Lock
// when retentionDays > 0) and points the environment at it with the root
// account's keys.
func startStore(t *testing.T, opts s3test.Options, retentionDays int32) *store {
	t.Helper()
	srv := s3test.Start(t, opts)
	srv.Bucket(t, "evidence", retentionDays)
	srv.RootEnv(t)
	return &store{t: t, srv: srv, bucket: "evidence"}
}

// url is the store's URL of the key prefix p.
func (s *store) url(p string) string { return "s3://" + s.bucket + "/" + p }

// keys lists every key under prefix, in key order, as the root account
// sees them.
func (s *store) keys(prefix string) []string {
	s.t.Helper()
	var keys []string
	pages := s3.NewListObjectsV2Paginator(s.srv.Client(), &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &prefix})
	for pages.HasMorePages() {
		page, err := pages.NextPage(context.Background())
		if err != nil {
			s.t.Fatal(err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}

// get reads the object key as the root account; nil when there is none.
func (s *store) get(key string) []byte {
	s.t.Helper()
	out, err := s.srv.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		if strings.Contains(err.Error(), "NoSuchKey") {
			return nil
		}
		s.t.Fatal(err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return data
}

// fetch reads the object an artifact's URL names.
func (s *store) fetch(url string) []byte {
	s.t.Helper()
	key, ok := strings.CutPrefix(url, "s3://"+s.bucket+"/")
	if !ok {
		s.t.Fatalf("%s is not a URL of bucket %s", url, s.bucket)
	}
	return s.get(key)
}

// committed reports whether run id has its commit object in out.
func (s *store) committed(out, id string) bool { return s.get(out+"/"+id) != nil }

// ledgerLines reads the ledger under prefix as the test sees it: every
// record object in seq order, each one line.
func (s *store) ledgerLines(prefix string) []string {
	s.t.Helper()
	var lines []string
	for _, key := range s.keys(prefix + "/") {
		lines = append(lines, string(s.get(key)))
	}
	return lines
}

// checkLedger checks the ledger under prefix twice: with the test's own
// chain check over the record objects, and with "tool-runner ledger", which
// must agree on the count and the head. It returns the records.
func (s *store) checkLedger(ws, prefix string) []record {
	s.t.Helper()
	is := is.New(s.t)
	recs, head := checkChain(s.t, s.ledgerLines(prefix))
	out, err := exec.Command(runnerPath(s.t), "ledger", "--workspace", ws, "--ledger", s.url(prefix)).Output()
	is.NoErr(err)
	is.Equal(string(out), fmt.Sprintf(`{"ledger":"verified","records":%d,"head":"%s"}`+"\n", len(recs), head))
	return recs
}

// A team's whole round trip with both places in a bucket: one-shot calls
// and an MCP server share the runs and the ledger; an analyze answers the
// URLs of the objects that hold its files; verify, the reviewer's page and
// the MCP resources read them there byte for byte; the ledger command
// checks the chain in the bucket.
func TestOneShotAndMCPKeepRunsAndTheLedgerInABucket(t *testing.T) {
	is := is.New(t)
	st := startStore(t, s3test.Options{}, 0)
	ws := fixture(t)
	digest := digestOf(t, ws)
	args := []string{"--workspace", ws, "--output-dir", st.url("team/runs"), "--ledger", st.url("team/ledger")}

	a := call(t, ws, analyzeRequest("r1", digest), args...)
	is.Equal(a.exit, 0)
	arts := a.resp["artifacts"].(map[string]any)
	is.Equal(len(arts), 3)
	for _, name := range []string{"result", "receipt", "checksums"} {
		url := arts[name].(string)
		is.True(strings.HasPrefix(url, st.url("team/runs/.attempt-"))) // the object that holds the file
		is.True(strings.HasSuffix(url, "/"+name+".json"))
		is.True(st.fetch(url) != nil) // and it is there
	}
	is.True(st.committed("team/runs", "r1"))

	again := call(t, ws, analyzeRequest("r1", digest), args...)
	is.Equal(again.code(), "OUTPUT_COLLISION")
	v := call(t, ws, verifyRequest("v1", "r1"), args...)
	is.Equal(v.result()["integrity"], "verified")
	missing := call(t, ws, verifyRequest("v2", "nothing"), args...)
	is.Equal(missing.code(), "MISSING_RESULT")

	cs := mcpSession(t, ws, args[2:]...)
	over := mcpCall(t, cs, nil, "analyze", map[string]any{"expected_source_digest": digest, "run_id": "r2"})
	is.Equal(over.code(), "")
	is.Equal(len(over.links), 3)
	res, err := cs.ListResources(context.Background(), nil)
	is.NoErr(err)
	var listed []string
	for _, r := range res.Resources {
		listed = append(listed, r.Name)
	}
	is.Equal(listed, []string{"r1", "r2"}) // the bucket's runs
	for _, run := range []struct {
		id   string
		arts map[string]any
	}{{"r1", arts}, {"r2", over.body["artifacts"].(map[string]any)}} {
		for _, name := range []string{"result", "receipt", "checksums"} {
			got, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "metricproof://runs/" + run.id + "/" + name + ".json"})
			is.NoErr(err)
			is.Equal(got.Contents[0].Text, string(st.fetch(run.arts[name].(string)))) // the object, byte for byte
		}
	}
	is.Equal(mcpCall(t, cs, nil, "verify_result", map[string]any{"run_id": "r1"}).result()["integrity"], "verified")

	page, err := exec.Command(runnerPath(t), "report", "--workspace", ws, "--output-dir", st.url("team/runs"), "--ledger", st.url("team/ledger"), "--run-id", "r2").Output()
	is.NoErr(err)
	is.True(bytes.HasPrefix(page, []byte("# Run `r2`: verified")))

	recs := st.checkLedger(ws, "team/ledger")
	is.Equal(len(recs), 6) // five one-shot and MCP tool calls; the reads are no calls
	var committed []string
	for _, r := range recs {
		if id, ok := r["run_id"].(string); ok {
			committed = append(committed, id)
		}
	}
	is.Equal(committed, []string{"r1", "r2"}) // each run has its record, once
}

// Two MCP servers, processes of their own sharing one bucket and one
// ledger, analyze the same run ID at the same moment, 20 times over: each
// time exactly one commits and the other answers OUTPUT_COLLISION; every
// answered call has its record, once; every run verifies. The test counts
// the rounds the commit's conditional write itself decided (the loser had
// staged its files); the long suite asserts that they raced there at
// least once, so a loop that never raced could not pass unnoticed.
func TestTwoServersAnalyzingOneRunIDCommitExactlyOnceEachTime(t *testing.T) {
	is := is.New(t)
	rounds := 20
	st := startStore(t, s3test.Options{}, 0)
	ws := fixture(t)
	digest := digestOf(t, ws)
	args := []string{"--output-dir", st.url("runs"), "--ledger", st.url("ledger")}
	servers := []*sdk.ClientSession{mcpSession(t, ws, args...), mcpSession(t, ws, args...)}
	var answered []string // the SHA256 of every answer's text
	for i := range rounds {
		id := fmt.Sprintf("race-%03d", i)
		answers := make([]mcpResponse, len(servers))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for j, cs := range servers {
			wg.Go(func() {
				<-start
				answers[j] = mcpCall(t, cs, nil, "analyze", map[string]any{"expected_source_digest": digest, "run_id": id})
			})
		}
		close(start)
		wg.Wait()
		codes := []string{answers[0].code(), answers[1].code()}
		slices.Sort(codes)
		if !slices.Equal(codes, []string{"", "OUTPUT_COLLISION"}) {
			t.Fatalf("round %d: answers %s and %s", i, answers[0].raw, answers[1].raw)
		}
		for _, a := range answers {
			answered = append(answered, testutil.SHA256Hex([]byte(a.raw)))
		}
	}
	attempts := 0
	for _, key := range st.keys("runs/") {
		if strings.HasSuffix(key, "/result.json") {
			attempts++
		}
	}
	t.Logf("%d rounds: %d decided by the commit's conditional write (both staged), %d by the loser's first read", rounds, attempts-rounds, 2*rounds-attempts)
	if testutil.Long() {
		is.True(attempts > rounds) // the calls really raced to the commit at least once
	}

	recs := st.checkLedger(ws, "ledger")
	is.Equal(len(recs), 2*rounds)
	recorded := map[string]int{}
	runs := map[string]int{}
	for _, r := range recs {
		recorded[r["response_sha256"].(string)]++
		if id, ok := r["run_id"].(string); ok {
			runs[id]++
		}
	}
	for _, sum := range answered {
		is.Equal(recorded[sum], 1) // every answered call, recorded once
	}
	is.Equal(len(runs), rounds) // one commit record per round
	for i := range rounds {
		id := fmt.Sprintf("race-%03d", i)
		is.Equal(runs[id], 1)
		v := mcpCall(t, servers[i%2], nil, "verify_result", map[string]any{"run_id": id})
		is.Equal(v.result()["integrity"], "verified")
	}
}

// SIGKILL at any moment of a one-shot analyze into a bucket leaves either
// no run or the whole run: a run that is visible verifies, one that is not
// is MISSING_RESULT, and the next call with the same run ID commits (or,
// where the killed one committed, collides with it). An attempt killed
// while staging leaves files no commit names, which block nothing. The
// ledger in the bucket stays a chain that verifies, and a run without its
// record can only be a kill's. Half the kills sweep the whole call, half
// sweep again, finely, across the stretch where the outcome turned from
// "nothing" to "committed", which holds the writes.
func TestKillingAnAnalyzeIntoABucketLeavesNothingPartialAndNoObstacle(t *testing.T) {
	testutil.SkipUnlessLong(t)
	is := is.New(t)
	attempts := 40
	if testing.Short() {
		attempts = 12
	}
	st := startStore(t, s3test.Options{}, 0)
	ws := fixture(t)
	digest := digestOf(t, ws)
	args := []string{"--workspace", ws, "--output-dir", st.url("runs"), "--ledger", st.url("ledger")}
	full := medianAnalyze(t, ws, digest, args)
	staged := func() int {
		n := 0
		for _, key := range st.keys("runs/.attempt-") {
			if strings.HasSuffix(key, "/"+"result.json") {
				n++
			}
		}
		return n
	}

	var before, midWrite, after, finished int
	coarse := attempts / 2
	lastEmpty, firstCommitted := time.Duration(0), full*12/10
	attempt := func(i int, delay time.Duration) {
		id := fmt.Sprintf("kill-%03d", i)
		stagedBefore := staged()
		signaled, _, err := runKilledAfter(t, ws, analyzeRequest(id, digest), delay, args...)
		committed := st.committed("runs", id)
		leftFiles := staged() > stagedBefore
		switch {
		case !signaled:
			finished++
			is.NoErr(err)
			is.True(committed)
		case committed:
			after++
		case leftFiles:
			midWrite++
		default:
			before++
		}
		if i < coarse {
			switch {
			case committed:
				firstCommitted = min(firstCommitted, delay)
			case !leftFiles:
				lastEmpty = max(lastEmpty, delay)
			}
		}
		v := call(t, ws, verifyRequest("v1", id), args...)
		retry := call(t, ws, analyzeRequest(id, digest), args...)
		if committed {
			is.Equal(v.result()["integrity"], "verified") // the whole run
			is.Equal(retry.code(), "OUTPUT_COLLISION")
		} else {
			is.Equal(v.code(), "MISSING_RESULT") // nothing of it visible
			is.Equal(retry.exit, 0)              // and nothing in the way
		}
	}
	for i := range coarse {
		attempt(i, full*12/10*time.Duration(i)/time.Duration(coarse-1))
	}
	lo, hi := min(lastEmpty, firstCommitted), max(lastEmpty, firstCommitted)
	for i := coarse; i < attempts; i++ {
		attempt(i, lo+(hi-lo)*time.Duration(i-coarse)/time.Duration(attempts-coarse-1))
	}
	t.Logf("%d kills, over 0..%v then %v..%v: %d before any write, %d while staging (leaving files no commit names), %d after the commit, %d ran to the end",
		attempts, full*12/10, lo, hi, before, midWrite, after, finished)
	is.True(before > 0) // the sweep reached both sides of the commit
	is.True(after+finished > 0)

	recs := st.checkLedger(ws, "ledger")
	recordOf := map[string]bool{}
	for _, r := range recs {
		if id, ok := r["run_id"].(string); ok {
			recordOf[id] = true
		}
	}
	unrecorded := 0
	for i := range attempts {
		id := fmt.Sprintf("kill-%03d", i)
		if st.committed("runs", id) && !recordOf[id] {
			unrecorded++ // killed between its commit and its record
		}
	}
	is.True(unrecorded <= after)
	t.Logf("%d runs committed by a killed call without its record", unrecorded)
}

// Two processes (MCP servers) appending to one ledger in a bucket at once,
// eight calls in flight each: one chain, which the ledger command
// verifies, holding every answered call exactly once.
func TestAppendersInTwoProcessesMakeOneChainWithEveryAnsweredCall(t *testing.T) {
	is := is.New(t)
	perServer := 24
	st := startStore(t, s3test.Options{}, 0)
	ws := fixture(t)
	args := []string{"--ledger", st.url("ledger")}
	servers := []*sdk.ClientSession{mcpSession(t, ws, args...), mcpSession(t, ws, args...)}
	answers := make([]string, 2*perServer)
	var wg sync.WaitGroup
	for j, cs := range servers {
		for k := range 8 {
			wg.Go(func() {
				for n := k; n < perServer; n += 8 {
					a := mcpCall(t, cs, nil, "inspect_inputs", map[string]any{})
					answers[j*perServer+n] = testutil.SHA256Hex([]byte(a.raw))
				}
			})
		}
	}
	wg.Wait()
	recs := st.checkLedger(ws, "ledger")
	is.Equal(len(recs), 2*perServer)
	recorded := map[string]int{}
	for _, r := range recs {
		recorded[r["response_sha256"].(string)]++
	}
	for _, sum := range answers {
		is.Equal(recorded[sum], 1)
	}
}

// On a bucket with Object Lock (compliance mode), with credentials that
// may create, read and list objects and nothing else (no delete), every
// command works, and every request the program sends, seen on the wire,
// is a read or a create with If-None-Match: *: never a delete, an
// overwrite, a retention, tag or ACL change.
func TestOnALockedBucketWithoutDeleteEveryCommandWorksAndNothingIsAskedToBeDeletedOrOverwritten(t *testing.T) {
	is := is.New(t)
	st := startStore(t, s3test.Options{IAM: true}, 1)
	st.srv.User(t, "evidence", "writer", "writer-secret-0000")
	var mu sync.Mutex
	var seen []string
	proxy := st.srv.Proxy(t, func(r *http.Request) s3test.Fault {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r.Method+" "+r.URL.RawQuery+" "+r.Header.Get("If-None-Match"))
		return s3test.Pass
	})
	st.srv.Env(t, "writer", "writer-secret-0000")
	t.Setenv("AWS_ENDPOINT_URL_S3", proxy)

	ws := fixture(t)
	key := newTestKey(t, t.TempDir(), "key")
	digest := digestOf(t, ws)
	args := []string{"--workspace", ws, "--output-dir", st.url("runs"), "--ledger", st.url("ledger"), "--signing-key", key.privPath}
	is.Equal(call(t, ws, analyzeRequest("r1", digest), args...).exit, 0)
	is.Equal(call(t, ws, analyzeRequest("r1", digest), args...).code(), "OUTPUT_COLLISION")
	is.Equal(call(t, ws, verifyRequest("v1", "r1"), args...).result()["integrity"], "verified")
	cs := mcpSession(t, ws, args[2:]...)
	is.Equal(mcpCall(t, cs, nil, "analyze", map[string]any{"expected_source_digest": digest, "run_id": "r2"}).code(), "")
	_, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "metricproof://runs/r2/attestation.json"})
	is.NoErr(err)
	page, err := exec.Command(runnerPath(t), "report", "--workspace", ws, "--output-dir", st.url("runs"), "--ledger", st.url("ledger"), "--run-id", "r1").Output()
	is.NoErr(err)
	is.True(bytes.HasPrefix(page, []byte("# Run `r1`: verified")))
	st.checkLedger(ws, "ledger")

	mu.Lock()
	defer mu.Unlock()
	methods := map[string]int{}
	for _, req := range seen {
		method, rest, _ := strings.Cut(req, " ")
		query, ifNoneMatch, _ := strings.Cut(rest, " ")
		methods[method]++
		switch method {
		case http.MethodGet, http.MethodHead:
		case http.MethodPut:
			is.Equal(ifNoneMatch, "*")                        // a create, never an overwrite
			is.True(query == "" || query == "x-id=PutObject") // of an object: no retention, tag, ACL or part
		default:
			t.Errorf("the program sent %s", req)
		}
	}
	t.Logf("requests on the wire: %v", methods)
	is.True(methods[http.MethodPut] > 0)

	// The credentials really may not delete, and the lock holds against
	// the bucket's owner too.
	writer := st.srv.ClientAs("writer", "writer-secret-0000")
	commitKey := "runs/r1"
	_, err = writer.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: &st.bucket, Key: &commitKey})
	is.True(err != nil)
	versions, err := st.srv.Client().ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{Bucket: &st.bucket, Prefix: &commitKey})
	is.NoErr(err)
	is.True(len(versions.Versions) > 0)
	_, err = st.srv.Client().DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: &st.bucket, Key: &commitKey, VersionId: versions.Versions[0].VersionId})
	is.True(err != nil) // locked
}

// A store that is down, fails, or refuses gives an honest answer and
// leaves nothing reported committed that is not: no answer is
// IO_OR_NUMERIC_ERROR and retryable, never MISSING_RESULT; a commit that
// failed committed nothing; a commit whose answer was lost and could not
// be read back says the run may be committed, and it is; an append that
// failed after a commit says the run stays; refused credentials say so.
func TestAStoreThatIsDownOrRefusesGetsHonestAnswers(t *testing.T) {
	st := startStore(t, s3test.Options{}, 0)
	ws := fixture(t)
	digest := digestOf(t, ws)
	args := []string{"--workspace", ws, "--output-dir", st.url("runs"), "--ledger", st.url("ledger")}
	is.New(t).Equal(call(t, ws, analyzeRequest("r0", digest), args...).exit, 0)

	// fault is the proxy's decision for each request while a case runs.
	var mu sync.Mutex
	var fault func(r *http.Request) s3test.Fault
	proxy := st.srv.Proxy(t, func(r *http.Request) s3test.Fault {
		mu.Lock()
		defer mu.Unlock()
		if fault == nil {
			return s3test.Pass
		}
		return fault(r)
	})
	t.Setenv("AWS_ENDPOINT_URL_S3", proxy)
	commitOf := func(id string) func(r *http.Request) bool {
		return func(r *http.Request) bool { return r.Method == http.MethodPut && r.URL.Path == "/evidence/runs/"+id }
	}
	sent := false // the commit of r2 went out (under mu)
	ledgerPut := func(r *http.Request) bool {
		return r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/evidence/ledger/")
	}
	tests := []struct {
		name      string
		request   string
		fault     func(r *http.Request) s3test.Fault
		code      string
		retryable bool
		says      string
		committed string // the run that must stand afterwards, "" for none
		absent    string // the run that must not
	}{
		{"every request fails", analyzeRequest("r1", digest), func(*http.Request) s3test.Fault { return s3test.Fail },
			"IO_OR_NUMERIC_ERROR", true, "nothing was run", "", "r1"},
		{"the commit fails", analyzeRequest("r1", digest), func(r *http.Request) s3test.Fault {
			if commitOf("r1")(r) {
				return s3test.Fail
			}
			return s3test.Pass
		}, "IO_OR_NUMERIC_ERROR", true, "nothing was committed", "", "r1"},
		{"the commit's answer is lost and it cannot be read back", analyzeRequest("r2", digest), func(r *http.Request) s3test.Fault {
			switch {
			case commitOf("r2")(r):
				sent = true
				return s3test.LoseAnswer // carried out, every try
			case sent && r.Method == http.MethodGet && r.URL.Path == "/evidence/runs/r2":
				return s3test.Fail // the read back (the read before the commit passes)
			}
			return s3test.Pass
		}, "IO_OR_NUMERIC_ERROR", false, "may be committed: verify it", "r2", ""},
		{"the commit's answer is lost and read back", analyzeRequest("r3", digest), func(r *http.Request) s3test.Fault {
			if commitOf("r3")(r) {
				return s3test.LoseAnswer
			}
			return s3test.Pass
		}, "", false, "", "r3", ""},
		{"the record fails after the commit", analyzeRequest("r4", digest), func(r *http.Request) s3test.Fault {
			if ledgerPut(r) {
				return s3test.Fail
			}
			return s3test.Pass
		}, "IO_OR_NUMERIC_ERROR", false, "run r4 was committed and stays committed", "r4", ""},
		{"verify while the store fails", verifyRequest("v1", "r0"), func(*http.Request) s3test.Fault { return s3test.Fail },
			"IO_OR_NUMERIC_ERROR", true, "", "r0", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			mu.Lock()
			fault = tt.fault
			mu.Unlock()
			o := call(t, ws, tt.request, args...)
			mu.Lock()
			fault = nil
			mu.Unlock()
			is.Equal(o.code(), tt.code)
			is.Equal(isRetryable(o), tt.retryable)
			is.True(strings.Contains(o.message(), tt.says))
			if tt.code != "" {
				is.Equal(len(o.resp["artifacts"].(map[string]any)), 0) // a failure claims no file
			}
			if tt.committed != "" {
				is.True(st.committed("runs", tt.committed))
				v := call(t, ws, verifyRequest("v9", tt.committed), args...)
				is.Equal(v.result()["integrity"], "verified") // what it says may stand does, whole
			}
			if tt.absent != "" {
				is.True(!st.committed("runs", tt.absent))
			}
		})
	}
	st.checkLedger(ws, "ledger")

	t.Run("the store down", func(t *testing.T) {
		is := is.New(t)
		t.Setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1")
		for _, req := range []string{verifyRequest("v1", "r0"), analyzeRequest("r5", digest), inspectRequest("i1")} {
			o := call(t, ws, req, args...)
			is.Equal(o.code(), "IO_OR_NUMERIC_ERROR")
			is.True(isRetryable(o))
		}
		mcp := exec.Command(runnerPath(t), "mcp", "--workspace", ws, "--output-dir", st.url("runs"))
		var stderr bytes.Buffer
		mcp.Stderr = &stderr
		var ee *exec.ExitError
		is.True(errors.As(mcp.Run(), &ee) && ee.ExitCode() == 2) // a server that could answer no call does not start
		is.True(strings.HasPrefix(stderr.String(), "IO_OR_NUMERIC_ERROR: "))
	})
	t.Run("credentials refused", func(t *testing.T) {
		is := is.New(t)
		t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret-5f3a")
		o := call(t, ws, verifyRequest("v1", "r0"), "--workspace", ws, "--output-dir", st.url("runs"))
		is.Equal(o.code(), "IO_OR_NUMERIC_ERROR")
		is.True(!isRetryable(o))
		is.True(strings.Contains(o.message(), "refused the credentials"))
		is.True(!strings.Contains(o.raw, "not-the-secret-5f3a"))
	})
}

// Every option fault about a store is found before any call (or, for a
// one-shot call, at its first use of the store), answered as each command
// answers an option fault, in one line that names no secret and no path.
func TestStoreOptionFaultsAreAnsweredOnceWithTheirCodes(t *testing.T) {
	st := startStore(t, s3test.Options{}, 0)
	ws := fixture(t)
	secret := st.srv.Secret // in the environment, and never in an answer
	none := t.TempDir() + "/none"
	tests := []struct {
		name string
		env  map[string]string
		// args after the command's own word and --workspace
		out, ledger string
		code        string
	}{
		{"a malformed URL", nil, "s3://Evidence/runs", "", "INVALID_OPTIONS"},
		{"a URL into an attempt", nil, "s3://evidence/runs/.attempt-0/x", "", "INVALID_OPTIONS"},
		{"a ledger URL malformed", nil, "", "s3://evidence//ledger", "INVALID_OPTIONS"},
		{"no region", map[string]string{"AWS_REGION": "", "AWS_CONFIG_FILE": none}, "s3://evidence/runs", "", "INVALID_OPTIONS"},
		{"no credentials", map[string]string{"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SHARED_CREDENTIALS_FILE": none}, "s3://evidence/runs", "", "INVALID_OPTIONS"},
		{"a bucket that does not exist", nil, "s3://no-such-bucket/runs", "", "INVALID_OUTPUT"},
		{"a ledger's bucket that does not exist", nil, "", "s3://no-such-bucket/ledger", "INVALID_OUTPUT"},
		{"the runs in a bucket, the ledger on disk", nil, "s3://evidence/runs", "calls.jsonl", "INVALID_OPTIONS"},
		{"the runs on disk, the ledger in a bucket", nil, "runs", "s3://evidence/ledger", "INVALID_OPTIONS"},
		{"the ledger below the runs", nil, "s3://evidence/runs", "s3://evidence/runs/r/ledger", "PATH_BOUNDARY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st.srv.Env(t, st.srv.Access, secret)
			for k, v := range tt.env {
				if v == "" {
					s3test.Unsetenv(t, k)
				} else {
					t.Setenv(k, v)
				}
			}
			var opts []string
			if tt.out != "" {
				opts = append(opts, "--output-dir", tt.out)
			}
			if tt.ledger != "" {
				opts = append(opts, "--ledger", tt.ledger)
			}
			before := st.keys("")
			t.Run("one-shot", func(t *testing.T) {
				is := is.New(t)
				req := verifyRequest("v1", "r1")
				if tt.out == "" {
					req = inspectRequest("i1")
				}
				o := call(t, ws, req, append([]string{"--workspace", ws}, opts...)...)
				is.Equal(o.exit, 1)
				is.Equal(o.code(), tt.code)
				is.True(!strings.Contains(o.raw, secret))
			})
			t.Run("mcp", func(t *testing.T) {
				is := is.New(t)
				exit, stdout, stderr := runCommand(t, ws, append([]string{"mcp", "--workspace", ws}, opts...)...)
				is.Equal(exit, 2)
				is.Equal(stdout, "")
				is.Equal(strings.Count(stderr, "\n"), 1)
				is.True(strings.HasPrefix(stderr, tt.code+": "))
				is.True(!strings.Contains(stderr, secret) && !strings.Contains(stderr, ws))
			})
			if tt.ledger != "" && tt.out == "" {
				t.Run("ledger", func(t *testing.T) {
					is := is.New(t)
					exit, stdout, _ := runCommand(t, ws, "ledger", "--workspace", ws, "--ledger", tt.ledger)
					is.Equal(exit, 2)
					is.True(strings.HasPrefix(stdout, `{"ledger":"error","code":"`+tt.code+`"`))
					is.True(!strings.Contains(stdout, secret))
				})
			}
			if tt.out != "" && !strings.Contains(tt.name, "ledger") && !strings.Contains(tt.name, "runs on disk") {
				t.Run("report", func(t *testing.T) {
					is := is.New(t)
					exit, stdout, stderr := runCommand(t, ws, "report", "--workspace", ws, "--output-dir", tt.out, "--run-id", "r1")
					is.Equal(exit, 2)
					is.Equal(stdout, "")
					is.True(strings.HasPrefix(stderr, tt.code+": "))
					is.True(!strings.Contains(stderr, secret))
				})
			}
			is.New(t).Equal(st.keys(""), before) // nothing written
		})
	}
}

// runCommand runs the runner with args in dir, standard input empty, and
// returns its exit status and what it wrote.
func runCommand(t *testing.T, dir string, args ...string) (exit int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(runnerPath(t), args...)
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		exit = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return exit, out.String(), errOut.String()
}

// A server over HTTP (protocol §14) whose output directory and ledger lie
// in a bucket is ready while the store answers: /readyz asks it (one
// listing of each place, and the ledger's last record) and says 503 with
// IO_OR_NUMERIC_ERROR while it fails, 200 again once it answers, while
// /healthz stays 200. The server runs confined, reaching the store
// through its port alone.
func TestReadinessOverHTTPAsksTheStore(t *testing.T) {
	is := is.New(t)
	st := startStore(t, s3test.Options{}, 0)
	var mu sync.Mutex
	down := false
	proxy := st.srv.Proxy(t, func(*http.Request) s3test.Fault {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return s3test.Fail
		}
		return s3test.Pass
	})
	t.Setenv("AWS_ENDPOINT_URL_S3", proxy)
	ws := fixture(t)
	cmd := exec.Command(runnerPath(t), "mcp", "--workspace", ws, "--output-dir", st.url("runs"), "--ledger", st.url("ledger"), "--http", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	is.NoErr(err)
	is.NoErr(cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	lines := bufio.NewReader(stderr)
	first, err := lines.ReadString('\n')
	if strings.HasPrefix(first, "warning: ") {
		first, err = lines.ReadString('\n')
	}
	is.NoErr(err)
	var l struct {
		Listening string `json:"listening"`
	}
	is.NoErr(json.Unmarshal([]byte(first), &l))
	go func() { _, _ = io.Copy(io.Discard, lines) }()
	base := strings.TrimSuffix(l.Listening, "/mcp")
	status := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		is.NoErr(err)
		defer resp.Body.Close()
		var body struct{ Status, Code string }
		is.NoErr(json.NewDecoder(resp.Body).Decode(&body))
		return resp.StatusCode, body.Code
	}
	code, _ := status("/readyz")
	is.Equal(code, http.StatusOK)

	mu.Lock()
	down = true
	mu.Unlock()
	code, name := status("/readyz")
	is.Equal(code, http.StatusServiceUnavailable)
	is.Equal(name, "IO_OR_NUMERIC_ERROR")
	code, _ = status("/healthz")
	is.Equal(code, http.StatusOK) // alive, not ready

	mu.Lock()
	down = false
	mu.Unlock()
	code, _ = status("/readyz")
	is.Equal(code, http.StatusOK)
}
