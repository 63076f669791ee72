//go:build unix

package main

// protocol §9's results sized for a model's context and run files as
// resources, against the real binary: the SDK's own Go client over real
// pipes, and raw pipes for the exact bytes.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metricproof/metricproof/internal/testutil"
)

// maxAnswerBytes is protocol §9's bound on a tool result at the default K.
const maxAnswerBytes = 12 << 10

// compactStructured is a tool result's structuredContent as compact JSON.
func compactStructured(t *testing.T, cs *sdk.ClientSession, tool string, args any) []byte {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, data); err != nil {
		t.Fatal(err)
	}
	return compact.Bytes()
}

// protocol §9's must-show, on the maximum inputs of §8 (10,000 rows, 64-character
// IDs): analyze answers within 12 KiB with truncated, and validates against
// its served outputSchema; each resource it links reads back as the exact
// bytes of the saved file; a bad URI is refused with its uri. The ledger
// records the text block the model was given, and no read.
func TestAnMCPClientGetsABoundedAnalyzeAndReadsEveryLinkedFile(t *testing.T) {
	is := is.New(t)
	ws := maxFixture(t)
	cs := mcpSession(t, ws, "--output-dir", "runs", "--ledger", "calls.jsonl")
	_, schemas := servedSchemas(t, cs)

	inspected := mcpCall(t, cs, schemas, "inspect_inputs", map[string]any{})
	is.True(len(inspected.raw) <= maxAnswerBytes)
	digest := inspected.result()["source_digest"].(string)

	a := mcpCall(t, cs, schemas, "analyze", map[string]any{"expected_source_digest": digest, "run_id": "bounded"})
	is.Equal(a.code(), "")
	t.Logf("analyze at 10,000 rows: %d bytes; result.json %d bytes", len(a.raw), len(readRunFile(t, ws, "bounded", "result.json")))
	is.True(len(a.raw) <= maxAnswerBytes) // the text block
	truncated := a.body["truncated"].(map[string]any)
	is.Equal(truncated["/result/revenue/contributions"], float64(10_000))
	is.Equal(len(a.result()["revenue"].(map[string]any)["contributions"].([]any)), 10) // the first K
	is.True(len(compactStructured(t, cs, "inspect_inputs", map[string]any{})) <= maxAnswerBytes)

	is.Equal(len(a.links), 3)
	for i, name := range []string{"result.json", "receipt.json", "checksums.json"} {
		l := a.links[i]
		is.Equal(l.URI, "metricproof://runs/bounded/"+name)
		saved := readRunFile(t, ws, "bounded", name)
		is.Equal(*l.Size, int64(len(saved)))
		res, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: l.URI})
		is.NoErr(err)
		is.Equal(res.Contents[0].Text, string(saved)) // exact bytes
		is.Equal(res.Contents[0].MIMEType, "application/json")
	}

	_, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "metricproof://runs/bounded/notes.txt"})
	var werr *jsonrpc.Error
	is.True(errors.As(err, &werr))
	is.Equal(werr.Code, int64(-32602))
	is.Equal(string(werr.Data), `{"uri":"metricproof://runs/bounded/notes.txt"}`) // refused with its uri

	v := mcpCall(t, cs, schemas, "verify_result", map[string]any{"run_id": "bounded"})
	is.Equal(v.result()["integrity"], "verified")
	is.Equal(len(v.links), 1)
	is.Equal(v.links[0].URI, "metricproof://runs/bounded/result.json")

	records, _ := checkChain(t, ledgerLines(t, filepath.Join(ws, "calls.jsonl")))
	is.Equal(len(records), 4)                                                  // the four tool calls; the reads are not calls
	is.Equal(records[1]["response_sha256"], testutil.SHA256Hex([]byte(a.raw))) // what the model was given
	checkCompleteRun(t, ws, "runs", "bounded")
}

func readRunFile(t *testing.T, ws, run, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ws, "runs", run, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// resources/list and resources/templates/list over real pipes.
func TestAnMCPClientListsTheRuns(t *testing.T) {
	is := is.New(t)
	ws := fixture(t)
	cs := mcpSession(t, ws, "--output-dir", "runs")
	digest := digestOf(t, ws)
	for _, id := range []string{"b-run", "a-run"} {
		is.Equal(mcpCall(t, cs, nil, "analyze", map[string]any{"expected_source_digest": digest, "run_id": id}).code(), "")
	}
	res, err := cs.ListResources(context.Background(), nil)
	is.NoErr(err)
	var names []string
	for _, r := range res.Resources {
		names = append(names, r.Name)
		is.Equal(r.Size, int64(len(readRunFile(t, ws, r.Name, "result.json"))))
	}
	is.Equal(names, []string{"a-run", "b-run"})
	is.Equal(res.NextCursor, "")
	templates, err := cs.ListResourceTemplates(context.Background(), nil)
	is.NoErr(err)
	is.Equal(len(templates.ResourceTemplates), 1)
	is.Equal(templates.ResourceTemplates[0].URITemplate, "metricproof://runs/{run_id}/{file}")
}

// The resource-not-found error is -32602 with data.uri as JSON whatever
// MCPGODEBUG says: the SDK's own would be -32002 under
// customresnotfounderrcode=1, and Go-quoted.
func TestResourceNotFoundIsPinnedWhateverMCPGODEBUGSays(t *testing.T) {
	for _, debug := range []string{"", "customresnotfounderrcode=1", "customresnotfounderrcode=1,nowrapinvalidparams=1,nomethodnotfoundcodeinerror=1"} {
		t.Run("MCPGODEBUG="+debug, func(t *testing.T) {
			is := is.New(t)
			t.Setenv("MCPGODEBUG", debug)
			s := startRawServer(t, fixture(t), "--output-dir", "runs")
			s.exchange(initialize("2025-06-18"))
			s.send(initialized)
			for i, uri := range []string{"metricproof://runs/r1/result.json\x7f", "file:///etc/passwd", "metricproof://runs/no-run/result.json"} {
				params, _ := json.Marshal(map[string]string{"uri": uri})
				m := s.exchange(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":%s}`, i+1, params))
				is.Equal(errorCode(m), float64(-32602))
				is.Equal(m["error"].(map[string]any)["data"], map[string]any{"uri": uri})
			}
			_, exit := s.finish()
			is.Equal(exit, 0)
		})
	}
}

// --list-limit is an option of mcp only, an integer from 0 to 1000: else
// INVALID_OPTIONS at start; the one-shot runner refuses it as it refuses
// any unknown option.
func TestListLimitFaultsStopTheServerAtStart(t *testing.T) {
	ws := fixture(t)
	for _, value := range []string{"1001", "-1", "ten", "1e1", "", "--output-dir"} {
		t.Run(value, func(t *testing.T) {
			is := is.New(t)
			cmd := exec.Command(runnerPath(t), "mcp", "--workspace", ws, "--list-limit", value)
			cmd.Stdin = strings.NewReader(initialize("2025-06-18") + "\n")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			is.True(errors.As(err, &ee) && ee.ExitCode() == 2)
			is.Equal(stdout.String(), "")
			is.True(strings.HasPrefix(stderr.String(), "INVALID_OPTIONS: "))
		})
	}
	is := is.New(t)
	o := call(t, ws, inspectRequest("i1"), "--workspace", ws, "--list-limit", "5")
	is.Equal(o.code(), "INVALID_OPTIONS")
	is.Equal(o.message(), "argument 3 is not a known option; see --help")
}

// The served outputSchema follows the options: with --list-limit 0 every
// list is empty and named in truncated, with 1000 the fixture is whole;
// each answer validates against the schema its server serves.
func TestEveryListLimitServesItsOwnSchemaAndAnswers(t *testing.T) {
	for _, tt := range []struct {
		k         string
		truncated map[string]any
	}{
		{"0", map[string]any{"/result/revenue/contributions": float64(5), "/result/customer_join/duplicate_keys": float64(1),
			"/result/release/blockers/0/subjects": float64(1), "/result/release/blockers/1/subjects": float64(1)}},
		{"1000", map[string]any{}},
	} {
		t.Run(tt.k, func(t *testing.T) {
			is := is.New(t)
			ws := fixture(t)
			cs := mcpSession(t, ws, "--output-dir", "runs", "--list-limit", tt.k)
			_, schemas := servedSchemas(t, cs)
			a := mcpCall(t, cs, schemas, "analyze", map[string]any{"expected_source_digest": digestOf(t, ws), "run_id": "k" + tt.k})
			is.Equal(a.code(), "")
			is.Equal(a.body["truncated"], tt.truncated)
			mcpCall(t, cs, schemas, "inspect_inputs", nil)
			mcpCall(t, cs, schemas, "verify_result", map[string]any{"run_id": "k" + tt.k})
			mcpCall(t, cs, schemas, "verify_result", map[string]any{"run_id": "nope"})
		})
	}
}

// The 2026-07-28 revision has no handshake: each request carries the
// protocol version and the client's capabilities in _meta. Resources are
// answered under it as under the handshake, the not-found error included.
func TestResourcesAnswerStatelessRequests(t *testing.T) {
	is := is.New(t)
	ws := fixture(t)
	analyze(t, ws, "runs", "r1")
	s := startRawServer(t, ws, "--output-dir", "runs")
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`
	read := s.exchange(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"metricproof://runs/r1/result.json",` + meta + `}}`)
	contents := read["result"].(map[string]any)["contents"].([]any)
	is.Equal(contents[0].(map[string]any)["text"], string(readRunFile(t, ws, "r1", "result.json"))) // exact bytes
	list := s.exchange(`{"jsonrpc":"2.0","id":2,"method":"resources/list","params":{` + meta + `}}`)
	resources := list["result"].(map[string]any)["resources"].([]any)
	is.Equal(len(resources), 1)
	is.Equal(resources[0].(map[string]any)["uri"], "metricproof://runs/r1/result.json")
	missing := s.exchange(`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"metricproof://runs/r2/result.json",` + meta + `}}`)
	is.Equal(errorCode(missing), float64(-32602))
	is.Equal(missing["error"].(map[string]any)["data"], map[string]any{"uri": "metricproof://runs/r2/result.json"})
	_, exit := s.finish()
	is.Equal(exit, 0)
}
