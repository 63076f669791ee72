package main

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/metricproof/metricproof/internal/testinputs"
)

// A case is one workspace and the steps run in it, in order. Every step
// that runs the runner is compared between the builds; the workspace's
// files are compared after the last step.
type testCase struct {
	name string
	// files are the workspace's files before the first step, by
	// workspace-relative path.
	files map[string][]byte
	steps []step
}

// A step runs the runner (args set), or changes the workspace (do set).
type step struct {
	args  []string
	stdin []byte
	// stdinFn builds stdin from the workspace as it is when the step runs
	// (an analyze with the digest of the current sources).
	stdinFn func(ws string) ([]byte, error)
	do      func(ws string) error
}

func call(stdin string, args ...string) step { return step{args: args, stdin: []byte(stdin)} }

func callBytes(stdin []byte, args ...string) step { return step{args: args, stdin: stdin} }

func change(do func(ws string) error) step { return step{do: do} }

// analyzeNow is an analyze of run id with the digest of the workspace's
// sources as they are when the step runs.
func analyzeNow(id string, args ...string) step {
	return step{args: args, stdinFn: func(ws string) ([]byte, error) {
		d, err := sourceDigest(ws)
		if err != nil {
			return nil, err
		}
		return []byte(analyzeRequest(id, d)), nil
	}}
}

func inspectRequest(id string) string {
	return `{"request_id":"` + id + `","tool":"inspect_inputs","arguments":{}}`
}

func analyzeRequest(id, digest string) string {
	return `{"request_id":"` + id + `","tool":"analyze","arguments":{"expected_source_digest":"` + digest + `"}}`
}

func verifyRequest(id, run string) string {
	return `{"request_id":"` + id + `","tool":"verify_result","arguments":{"run_id":"` + run + `"}}`
}

// sourceNames are the four sources of protocol §4.
func sourceNames() []string {
	return []string{"data/transactions.csv", "data/groups.csv", "data/customers.csv", "contracts/metric-definitions.json"}
}

// sourceDigest computes the combined source digest of protocol §4 from the
// files themselves, independently of either build: SHA256 of the sorted
// map of SHA256s as compact JSON and a newline. A missing source hashes
// as empty; the runner refuses it anyway.
func sourceDigest(ws string) (string, error) {
	sums := map[string]string{}
	for _, name := range sourceNames() {
		data, err := os.ReadFile(filepath.Join(ws, name))
		if err != nil && !os.IsNotExist(err) {
			return "", err
		}
		s := sha256.Sum256(data)
		sums[name] = hex.EncodeToString(s[:])
	}
	canonical, err := json.Marshal(sums) // sorted keys, compact
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(append(canonical, '\n'))
	return hex.EncodeToString(s[:]), nil
}

// caseSet reads the shared test inputs of the repository and returns every
// case.
func caseSet(repo string) ([]testCase, error) {
	fixture, err := readFixture(repo)
	if err != nil {
		return nil, err
	}
	var cases []testCase
	reqs, err := requestCases(repo, fixture)
	if err != nil {
		return nil, err
	}
	cases = append(cases, reqs...)
	variants, err := sourceCases(repo, fixture)
	if err != nil {
		return nil, err
	}
	cases = append(cases, variants...)
	cases = append(cases, optionCases(fixture)...)
	cases = append(cases, storyCases(fixture)...)
	cases = append(cases, damageCases(fixture)...)
	signed, err := signedCases(fixture)
	if err != nil {
		return nil, err
	}
	cases = append(cases, signed...)
	cases = append(cases, ledgerCases(fixture)...)
	maxCases, err := maxInputCases(repo, fixture)
	if err != nil {
		return nil, err
	}
	cases = append(cases, maxCases...)
	names := map[string]bool{}
	for _, c := range cases {
		if names[c.name] {
			return nil, fmt.Errorf("two cases are named %q", c.name)
		}
		names[c.name] = true
	}
	return cases, nil
}

// readFixture reads the shipped fixture's four sources.
func readFixture(repo string) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, name := range sourceNames() {
		data, err := os.ReadFile(filepath.Join(repo, name))
		if err != nil {
			return nil, err
		}
		files[name] = data
	}
	return files, nil
}

func with(base map[string][]byte, name string, data []byte) map[string][]byte {
	out := make(map[string][]byte, len(base)+1)
	for k, v := range base {
		out[k] = v
	}
	if data == nil {
		delete(out, name)
	} else {
		out[name] = data
	}
	return out
}

// requestCases: every hostile request of testdata/requests.json, on the
// fixture with --output-dir runs.
func requestCases(repo string, fixture map[string][]byte) ([]testCase, error) {
	data, err := os.ReadFile(filepath.Join(repo, "testdata", "requests.json"))
	if err != nil {
		return nil, err
	}
	reqs, err := testinputs.Requests(data)
	if err != nil {
		return nil, err
	}
	var cases []testCase
	for _, r := range reqs {
		input, err := testinputs.Assemble(r.Input)
		if err != nil {
			return nil, fmt.Errorf("requests.json %q: %w", r.Name, err)
		}
		cases = append(cases, testCase{
			name:  "request: " + r.Name,
			files: fixture,
			steps: []step{callBytes(input, "--workspace", ".", "--output-dir", "runs")},
		})
	}
	// Beside the shared cases, one request for each refusal message of
	// protocol §2's checks, so that a changed sentence shows.
	digest := strings.Repeat("a", 64)
	for _, r := range []struct{ name, input string }{
		{"no request_id", `{"tool":"inspect_inputs","arguments":{}}`},
		{"no tool", `{"request_id":"r1","arguments":{}}`},
		{"no arguments", `{"request_id":"r1","tool":"inspect_inputs"}`},
		{"tool a number", `{"request_id":"r1","tool":7,"arguments":{}}`},
		{"tool an array", `{"request_id":"r1","tool":[],"arguments":{}}`},
		{"arguments a string", `{"request_id":"r1","tool":"inspect_inputs","arguments":"x"}`},
		{"arguments a boolean", `{"request_id":"r1","tool":"inspect_inputs","arguments":true}`},
		{"inspect with an argument", `{"request_id":"r1","tool":"inspect_inputs","arguments":{"x":1}}`},
		{"analyze without its digest", `{"request_id":"r1","tool":"analyze","arguments":{}}`},
		{"analyze with a run_id", `{"request_id":"r1","tool":"analyze","arguments":{"expected_source_digest":"` + digest + `","run_id":"r1"}}`},
		{"analyze digest null", `{"request_id":"r1","tool":"analyze","arguments":{"expected_source_digest":null}}`},
		{"analyze digest an object", `{"request_id":"r1","tool":"analyze","arguments":{"expected_source_digest":{}}}`},
		{"verify with an extra argument", `{"request_id":"r1","tool":"verify_result","arguments":{"run_id":"r1","x":1}}`},
		{"verify run_id a number", `{"request_id":"r1","tool":"verify_result","arguments":{"run_id":1}}`},
		{"verify run_id too long", `{"request_id":"r1","tool":"verify_result","arguments":{"run_id":"` + strings.Repeat("r", 65) + `"}}`},
		{"a number top level", `12`},
		{"a boolean top level", `true`},
		{"a deep array", strings.Repeat("[", 600) + strings.Repeat("]", 600)},
		{"an exponent in arguments", `{"request_id":"r1","tool":"inspect_inputs","arguments":{"x":1e400}}`},
	} {
		cases = append(cases, testCase{
			name:  "request message: " + r.name,
			files: fixture,
			steps: []step{call(r.input, "--workspace", ".", "--output-dir", "runs")},
		})
	}
	return cases, nil
}

// sourceCases: every fixture variant of testdata/sources.json, after a run
// of the good fixture: inspect, analyze with the variant's digest, and
// verify of the earlier run.
func sourceCases(repo string, fixture map[string][]byte) ([]testCase, error) {
	data, err := os.ReadFile(filepath.Join(repo, "testdata", "sources.json"))
	if err != nil {
		return nil, err
	}
	variants, err := testinputs.SourceVariants(data)
	if err != nil {
		return nil, err
	}
	var cases []testCase
	for _, v := range variants {
		var input []byte
		if !v.Remove {
			if input, err = testinputs.Assemble(v.Input); err != nil {
				return nil, fmt.Errorf("sources.json %q: %w", v.Name, err)
			}
		}
		cases = append(cases, testCase{
			name:  "source: " + v.Name,
			files: fixture,
			steps: []step{
				analyzeNow("before", "--workspace", ".", "--output-dir", "runs"),
				change(func(ws string) error {
					p := filepath.Join(ws, v.File)
					if v.Remove {
						return os.Remove(p)
					}
					return os.WriteFile(p, input, 0o644)
				}),
				call(inspectRequest("i1"), "--workspace", ".", "--output-dir", "runs"),
				analyzeNow("after", "--workspace", ".", "--output-dir", "runs"),
				call(verifyRequest("v1", "before"), "--workspace", ".", "--output-dir", "runs"),
			},
		})
	}
	return cases, nil
}

// optionCases: the command line's faults and the commands' help, each with
// a valid inspect request on standard input.
func optionCases(fixture map[string][]byte) []testCase {
	in := inspectRequest("i1")
	tables := []struct {
		name string
		args []string
	}{
		{"no options", nil},
		{"help", []string{"--help"}},
		{"help twice", []string{"--help", "--help"}},
		{"help with options", []string{"--workspace", ".", "--help"}},
		{"workspace missing", []string{"--output-dir", "runs"}},
		{"workspace does not exist", []string{"--workspace", "nowhere"}},
		{"workspace is a file", []string{"--workspace", "data/groups.csv"}},
		{"workspace empty value", []string{"--workspace="}},
		{"workspace without value", []string{"--workspace"}},
		{"workspace value starting with --", []string{"--workspace", "--output-dir"}},
		{"workspace repeated", []string{"--workspace", ".", "--workspace", "."}},
		{"inline value", []string{"--workspace=."}},
		{"unknown option", []string{"--workspace", ".", "--verbose"}},
		{"single dash option", []string{"-workspace", "."}},
		{"positional argument", []string{"--workspace", ".", "extra"}},
		{"mcp not first", []string{"--workspace", ".", "mcp"}},
		{"ledger not first", []string{"--workspace", ".", "ledger"}},
		{"output dir outside", []string{"--workspace", ".", "--output-dir", "../elsewhere"}},
		{"output dir absolute outside", []string{"--workspace", ".", "--output-dir", "/tmp"}},
		{"output dir is data", []string{"--workspace", ".", "--output-dir", "data"}},
		{"output dir inside contracts", []string{"--workspace", ".", "--output-dir", "contracts/runs"}},
		{"output dir is the workspace", []string{"--workspace", ".", "--output-dir", "."}},
		{"output dir is a source file", []string{"--workspace", ".", "--output-dir", "data/groups.csv"}},
		{"output dir below a file", []string{"--workspace", ".", "--output-dir", "data/groups.csv/runs"}},
		{"output dir in .git", []string{"--workspace", ".", "--output-dir", ".git/runs"}},
		{"output dir in src", []string{"--workspace", ".", "--output-dir", "src"}},
		{"cancel file outside", []string{"--workspace", ".", "--cancel-file", "../stop"}},
		{"ledger outside", []string{"--workspace", ".", "--ledger", "../calls.jsonl"}},
		{"ledger in data", []string{"--workspace", ".", "--ledger", "data/calls.jsonl"}},
		{"ledger directory missing", []string{"--workspace", ".", "--ledger", "nodir/calls.jsonl"}},
		{"ledger is a directory", []string{"--workspace", ".", "--ledger", "data"}},
		{"ledger is the writer lock", []string{"--workspace", ".", "--output-dir", "runs", "--ledger", "runs/.writer.lock"}},
		{"ledger below the output dir", []string{"--workspace", ".", "--output-dir", "runs", "--ledger", "runs/sub/calls.jsonl"}},
		{"ledger is the output dir", []string{"--workspace", ".", "--output-dir", "runs", "--ledger", "runs"}},
		{"signing key missing", []string{"--workspace", ".", "--signing-key", "nokey.pem"}},
		{"signing key not PEM", []string{"--workspace", ".", "--signing-key", "data/groups.csv"}},
		{"trusted key missing", []string{"--workspace", ".", "--trusted-key", "nokey.pem"}},
		{"trusted key a directory", []string{"--workspace", ".", "--trusted-key", "data"}},
		{"mcp help", []string{"mcp", "--help"}},
		{"mcp unknown option", []string{"mcp", "--bogus"}},
		{"mcp without workspace", []string{"mcp"}},
		{"mcp positional", []string{"mcp", "--workspace", ".", "x"}},
		{"mcp output dir outside", []string{"mcp", "--workspace", ".", "--output-dir", "../x"}},
		{"ledger help", []string{"ledger", "--help"}},
		{"ledger without ledger", []string{"ledger", "--workspace", "."}},
		{"ledger without workspace", []string{"ledger", "--ledger", "calls.jsonl"}},
		{"ledger missing file", []string{"ledger", "--workspace", ".", "--ledger", "calls.jsonl"}},
		{"ledger extra option", []string{"ledger", "--workspace", ".", "--ledger", "calls.jsonl", "--output-dir", "runs"}},
		{"ledger of a directory", []string{"ledger", "--workspace", ".", "--ledger", "data"}},
		{"ledger of a source", []string{"ledger", "--workspace", ".", "--ledger", "data/groups.csv"}},
	}
	cases := make([]testCase, 0, len(tables)+1)
	for _, tc := range tables {
		cases = append(cases, testCase{name: "option: " + tc.name, files: fixture, steps: []step{call(in, tc.args...)}})
	}
	// An output directory that is a file, and a cancel marker that exists.
	cases = append(cases,
		testCase{name: "option: output dir is an existing file", files: with(fixture, "runs", []byte("x")), steps: []step{
			call(in, "--workspace", ".", "--output-dir", "runs"),
			analyzeNow("a1", "--workspace", ".", "--output-dir", "runs"),
			call(verifyRequest("v1", "a1"), "--workspace", ".", "--output-dir", "runs"),
		}},
		testCase{name: "option: cancel file present", files: with(fixture, "stop", []byte{}), steps: []step{
			call(in, "--workspace", ".", "--cancel-file", "stop"),
			analyzeNow("a1", "--workspace", ".", "--output-dir", "runs", "--cancel-file", "stop"),
			call(verifyRequest("v1", "a1"), "--workspace", ".", "--output-dir", "runs", "--cancel-file", "stop"),
		}},
		testCase{name: "option: cancel file absent", files: fixture, steps: []step{
			analyzeNow("a1", "--workspace", ".", "--output-dir", "runs", "--cancel-file", "stop"),
			call(verifyRequest("v1", "a1"), "--workspace", ".", "--output-dir", "runs", "--cancel-file", "stop"),
		}},
	)
	return cases
}

// storyCases: the tools in the order an agent calls them.
func storyCases(fixture map[string][]byte) []testCase {
	out := []string{"--workspace", ".", "--output-dir", "runs"}
	return []testCase{
		{name: "story: inspect, analyze, verify", files: fixture, steps: []step{
			call(inspectRequest("i1"), out...),
			analyzeNow("r1", out...),
			call(verifyRequest("v1", "r1"), out...),
		}},
		{name: "story: inspect without an output dir", files: fixture, steps: []step{
			call(inspectRequest("i1"), "--workspace", "."),
			analyzeNow("r1", "--workspace", "."),
			call(verifyRequest("v1", "r1"), "--workspace", "."),
		}},
		{name: "story: a collision and a stale digest", files: fixture, steps: []step{
			analyzeNow("r1", out...),
			analyzeNow("r1", out...),
			call(analyzeRequest("r2", strings.Repeat("0", 64)), out...),
			call(verifyRequest("v1", "r2"), out...),
			call(verifyRequest("v2", "nothere"), out...),
		}},
		{name: "story: a nested output dir", files: fixture, steps: []step{
			analyzeNow("r1", "--workspace", ".", "--output-dir", "out/a/b"),
			call(verifyRequest("v1", "r1"), "--workspace", ".", "--output-dir", "out/a/b"),
			analyzeNow("r2", "--workspace", ".", "--output-dir", "out/a/b/r1"),
		}},
		{name: "story: an output dir inside a run", files: fixture, steps: []step{
			analyzeNow("r1", out...),
			analyzeNow("r2", "--workspace", ".", "--output-dir", "runs/r1/x"),
			call(inspectRequest("i1"), "--workspace", ".", "--output-dir", "runs/r1"),
		}},
		{name: "story: an absolute-looking run id", files: fixture, steps: []step{
			call(verifyRequest("v1", "..."), out...),
			call(`{"request_id":"v2","tool":"verify_result","arguments":{"run_id":"../x"}}`, out...),
		}},
		{name: "story: the sources change after a run", files: fixture, steps: []step{
			analyzeNow("r1", out...),
			change(func(ws string) error {
				return os.WriteFile(filepath.Join(ws, "data/groups.csv"), []byte("group_id,successes,eligible\nG1,1,2\n"), 0o644)
			}),
			call(verifyRequest("v1", "r1"), out...),
			analyzeNow("r2", out...),
			call(verifyRequest("v2", "r2"), out...),
		}},
		{name: "story: eligible zero", files: with(fixture, "data/groups.csv", []byte("group_id,successes,eligible\nG1,0,0\n")), steps: []step{
			call(inspectRequest("i1"), out...),
			analyzeNow("r1", out...),
			call(verifyRequest("v1", "r1"), out...),
		}},
		{name: "story: a release-eligible run", files: with(with(fixture,
			"data/customers.csv", []byte("customer_id,segment\nC1,retail\nC2,retail\nC3,wholesale\nC4,retail\nC5,online\n")),
			"data/transactions.csv", []byte("transaction_id,customer_id,quantity,unit_price,discount\r\nT1,C1,2,100.00,0.10\r\nT2,C2,-1,\"90.00\",0\r\n\r\nT3,C3,1,50.00,0\nT4,C4,3,7.5,0.5\nT5,C5,4,12.50,1\n")),
			steps: []step{
				call(inspectRequest("i1"), out...),
				analyzeNow("r1", out...),
				call(verifyRequest("v1", "r1"), out...),
			}},
		{name: "story: empty sources", files: with(with(with(fixture,
			"data/customers.csv", []byte("customer_id,segment\n")),
			"data/transactions.csv", []byte("transaction_id,customer_id,quantity,unit_price,discount\n")),
			"data/groups.csv", []byte("\n\ngroup_id,successes,eligible")),
			steps: []step{
				call(inspectRequest("i1"), out...),
				analyzeNow("r1", out...),
				call(verifyRequest("v1", "r1"), out...),
			}},
	}
}

// damageCases: a committed run damaged one way at a time, then verified.
func damageCases(fixture map[string][]byte) []testCase {
	out := []string{"--workspace", ".", "--output-dir", "runs"}
	run := func(ws, name string) string { return filepath.Join(ws, "runs", "r1", name) }
	flip := func(name string, at int) func(string) error {
		return func(ws string) error {
			data, err := os.ReadFile(run(ws, name))
			if err != nil {
				return err
			}
			data[at%len(data)] ^= 0x01
			return os.WriteFile(run(ws, name), data, 0o644)
		}
	}
	edit := func(name, from, to string) func(string) error {
		return func(ws string) error {
			data, err := os.ReadFile(run(ws, name))
			if err != nil {
				return err
			}
			return os.WriteFile(run(ws, name), []byte(strings.Replace(string(data), from, to, 1)), 0o644)
		}
	}
	damages := []struct {
		name string
		do   func(string) error
	}{
		{"result byte flipped", flip("result.json", 40)},
		{"receipt byte flipped", flip("receipt.json", 40)},
		// A hex digit of result.json's sum changed to another hex digit: the
		// receipt's sum, which differs from run to run, stays masked.
		{"checksums digest changed", func(ws string) error {
			data, err := os.ReadFile(run(ws, "checksums.json"))
			if err != nil {
				return err
			}
			at := strings.Index(string(data), `"result.json": "`) + len(`"result.json": "`)
			if data[at] == '0' {
				data[at] = '1'
			} else {
				data[at] = '0'
			}
			return os.WriteFile(run(ws, "checksums.json"), data, 0o644)
		}},
		{"result truncated", func(ws string) error { return os.Truncate(run(ws, "result.json"), 10) }},
		{"result removed", func(ws string) error { return os.Remove(run(ws, "result.json")) }},
		{"receipt removed", func(ws string) error { return os.Remove(run(ws, "receipt.json")) }},
		{"checksums removed", func(ws string) error { return os.Remove(run(ws, "checksums.json")) }},
		{"run removed", func(ws string) error { return os.RemoveAll(filepath.Join(ws, "runs", "r1")) }},
		{"an extra file", func(ws string) error { return os.WriteFile(run(ws, "notes.txt"), []byte("x"), 0o644) }},
		{"an attestation added", func(ws string) error { return os.WriteFile(run(ws, "attestation.json"), []byte("{}"), 0o644) }},
		{"result a directory", func(ws string) error {
			if err := os.Remove(run(ws, "result.json")); err != nil {
				return err
			}
			return os.Mkdir(run(ws, "result.json"), 0o755)
		}},
		{"result a symlink", func(ws string) error {
			if err := os.Rename(run(ws, "result.json"), filepath.Join(ws, "result.copy")); err != nil {
				return err
			}
			return os.Symlink("../../result.copy", run(ws, "result.json"))
		}},
		{"run a file", func(ws string) error {
			if err := os.RemoveAll(filepath.Join(ws, "runs", "r1")); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(ws, "runs", "r1"), []byte("x"), 0o644)
		}},
		{"result not JSON", func(ws string) error { return os.WriteFile(run(ws, "result.json"), []byte("not json\n"), 0o644) }},
		{"receipt names another run", edit("receipt.json", `"run_id": "r1"`, `"run_id": "r2"`)},
		{"receipt names another protocol", edit("receipt.json", `"protocol_version": "1.0"`, `"protocol_version": "2.0"`)},
		{"receipt created_at not UTC", edit("receipt.json", `Z"`, `+01:00"`)},
		{"result rate edited", edit("result.json", `"0.827272727273"`, `"0.827272727274"`)},
		{"result re-indented", edit("result.json", "\n  ", "\n   ")},
		{"a source changed", func(ws string) error {
			return os.WriteFile(filepath.Join(ws, "data/customers.csv"), []byte("customer_id,segment\nC1,retail\n"), 0o644)
		}},
		{"a source removed", func(ws string) error { return os.Remove(filepath.Join(ws, "data/customers.csv")) }},
	}
	cases := make([]testCase, 0, len(damages))
	for _, d := range damages {
		cases = append(cases, testCase{name: "damage: " + d.name, files: fixture, steps: []step{
			analyzeNow("r1", out...),
			change(d.do),
			call(verifyRequest("v1", "r1"), out...),
		}})
	}
	return cases
}

// signedCases: runs signed with a fixed Ed25519 key, verified with and
// without the trusted key, by another key, and with their signature
// removed.
func signedCases(fixture map[string][]byte) ([]testCase, error) {
	key, err := pemKeys(1)
	if err != nil {
		return nil, err
	}
	other, err := pemKeys(2)
	if err != nil {
		return nil, err
	}
	files := with(with(with(fixture, "keys/signing.pem", key.private), "keys/trusted.pem", key.public), "keys/other.pem", other.public)
	files = with(files, "keys/public-as-signing.pem", key.public)
	out := []string{"--workspace", ".", "--output-dir", "runs"}
	signing := append(slices.Clone(out), "--signing-key", "keys/signing.pem")
	trusted := append(slices.Clone(out), "--trusted-key", "keys/trusted.pem")
	otherKey := append(slices.Clone(out), "--trusted-key", "keys/other.pem")
	return []testCase{
		{name: "signed: analyze and verify", files: files, steps: []step{
			analyzeNow("s1", signing...),
			call(verifyRequest("v1", "s1"), out...),
			call(verifyRequest("v2", "s1"), trusted...),
			call(verifyRequest("v3", "s1"), otherKey...),
			analyzeNow("u1", out...),
			call(verifyRequest("v4", "u1"), trusted...),
		}},
		{name: "signed: attestation removed", files: files, steps: []step{
			analyzeNow("s1", signing...),
			change(func(ws string) error { return os.Remove(filepath.Join(ws, "runs/s1/attestation.json")) }),
			call(verifyRequest("v1", "s1"), out...),
			call(verifyRequest("v2", "s1"), trusted...),
		}},
		{name: "signed: attestation damaged", files: files, steps: []step{
			analyzeNow("s1", signing...),
			change(func(ws string) error {
				return os.WriteFile(filepath.Join(ws, "runs/s1/attestation.json"), []byte(`{"payload":"","payloadType":"x","signatures":[]}`), 0o644)
			}),
			call(verifyRequest("v1", "s1"), out...),
		}},
		{name: "signed: key faults", files: files, steps: []step{
			call(inspectRequest("i1"), "--workspace", ".", "--signing-key", "keys/public-as-signing.pem"),
			call(inspectRequest("i2"), "--workspace", ".", "--trusted-key", "keys/signing.pem"),
			change(func(ws string) error { return os.Chmod(filepath.Join(ws, "keys/signing.pem"), 0o644) }),
			call(inspectRequest("i3"), "--workspace", ".", "--signing-key", "keys/signing.pem"),
		}},
	}, nil
}

type keyPair struct{ private, public []byte }

// pemKeys returns a fixed Ed25519 key pair (from a seed of one repeated
// byte) as PKCS#8 and SPKI PEM.
func pemKeys(seedByte byte) (keyPair, error) {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = seedByte
	}
	priv := ed25519.NewKeyFromSeed(seed)
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return keyPair{}, err
	}
	pub, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		return keyPair{}, err
	}
	return keyPair{
		private: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}),
		public:  pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}),
	}, nil
}

// ledgerCases: calls recorded in a ledger, the ledger command over it, and
// a tampered ledger.
func ledgerCases(fixture map[string][]byte) []testCase {
	rec := []string{"--workspace", ".", "--output-dir", "runs", "--ledger", "calls.jsonl"}
	check := []string{"ledger", "--workspace", ".", "--ledger", "calls.jsonl"}
	calls := []step{
		call(inspectRequest("i1"), rec...),
		analyzeNow("r1", rec...),
		call(verifyRequest("v1", "r1"), rec...),
		call(`{"request_id":"bad","tool":"nope","arguments":{}}`, rec...),
		call(`not json`, rec...),
		callBytes(make([]byte, 70000), rec...),
		call(inspectRequest("i2"), "--workspace", ".", "--ledger", "calls.jsonl"),
		call("", check...),
	}
	tamper := func(ws string) error {
		p := filepath.Join(ws, "calls.jsonl")
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(p, []byte(strings.Replace(string(data), `"seq":2`, `"seq":7`, 1)), 0o600)
	}
	tear := func(ws string) error {
		p := filepath.Join(ws, "calls.jsonl")
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(p, data[:len(data)-2], 0o600) // "}\n": what the masks hide stays whole
	}
	inOut := []string{"--workspace", ".", "--output-dir", "runs", "--ledger", "runs/calls.jsonl"}
	return []testCase{
		{name: "ledger: calls and the chain", files: fixture, steps: calls},
		{name: "ledger: a record edited", files: fixture, steps: append(slices.Clone(calls[:3]),
			change(tamper),
			call("", check...),
			call(inspectRequest("i3"), rec...),
		)},
		{name: "ledger: the last line torn", files: fixture, steps: append(slices.Clone(calls[:3]),
			change(tear),
			call("", check...),
			call(inspectRequest("i3"), rec...),
		)},
		{name: "ledger: in the output dir", files: fixture, steps: []step{
			analyzeNow("r1", inOut...),
			analyzeNow("calls.jsonl", inOut...),
			call(verifyRequest("v1", "r1"), inOut...),
			call("", "ledger", "--workspace", ".", "--ledger", "runs/calls.jsonl"),
		}},
		{name: "ledger: named after a run file", files: fixture, steps: []step{
			call(inspectRequest("i1"), "--workspace", ".", "--output-dir", "runs", "--ledger", "runs/result.json"),
			call(inspectRequest("i2"), "--workspace", ".", "--output-dir", "runs", "--ledger", "runs/result.json"),
			call("", "ledger", "--workspace", ".", "--ledger", "runs/result.json"),
		}},
		{name: "ledger: an empty file", files: with(fixture, "calls.jsonl", []byte{}), steps: []step{
			call("", check...),
			call(inspectRequest("i1"), rec...),
			call("", check...),
		}},
	}
}

// maxInputCases: the maximum inputs of protocol §8, whole and cut by one row.
func maxInputCases(repo string, fixture map[string][]byte) ([]testCase, error) {
	data, err := os.ReadFile(filepath.Join(repo, "testdata", "max-sources.json"))
	if err != nil {
		return nil, err
	}
	m, err := testinputs.ParseMax(data)
	if err != nil {
		return nil, err
	}
	srcs, err := m.Sources()
	if err != nil {
		return nil, err
	}
	files := fixture
	for name, b := range srcs {
		files = with(files, name, b)
	}
	out := []string{"--workspace", ".", "--output-dir", "runs"}
	return []testCase{
		{name: "max: inspect, analyze, verify", files: files, steps: []step{
			call(inspectRequest("i1"), out...),
			analyzeNow("r1", out...),
			call(verifyRequest("v1", "r1"), out...),
		}},
		{name: "max: 1,000 rows", files: func() map[string][]byte {
			f := fixture
			for name, b := range m.Generate(1000) {
				f = with(f, name, b)
			}
			return f
		}(), steps: []step{
			call(inspectRequest("i1"), out...),
			analyzeNow("r1", out...),
			call(verifyRequest("v1", "r1"), out...),
		}},
	}, nil
}
