package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/spf13/afero"

	"github.com/metricproof/metricproof/adapters/cli"
	"github.com/metricproof/metricproof/adapters/mcp"
	"github.com/metricproof/metricproof/adapters/mcp/internal/mcptest"
	"github.com/metricproof/metricproof/adapters/memfs"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/evidence"
	"github.com/metricproof/metricproof/ports"
)

// Results sized for a model's context and run files as resources (protocol
// §9), through the SDK's own client over its in-memory transports.

// A successful analyze links every file of its run, and a successful
// verify the run's result.json; each link reads back as the exact bytes
// of the saved file, and neither the reads nor anything else write or
// record a thing.
func TestAnswersLinkTheirRunFilesAndEachLinkReadsTheExactBytes(t *testing.T) {
	for _, signed := range []bool{false, true} {
		t.Run(fmt.Sprintf("signed=%v", signed), func(t *testing.T) {
			is := is.New(t)
			w := mcptest.NewWorld(t)
			args := []string{"--output-dir", "runs", "--ledger", "calls.jsonl"}
			if signed {
				args = append(args, "--signing-key", signingKey(t))
			}
			cs := session(t, w.Service(args...), context.Background())
			digest := mcptest.DigestOf(t, cs)

			r, analyzed := mcptest.CallToolLinks(t, cs, "analyze", map[string]any{"expected_source_digest": digest, "run_id": "linked"})
			is.Equal(r.Code(), "")
			files := []string{"result.json", "receipt.json", "checksums.json"}
			if signed {
				files = append(files, "attestation.json")
			}
			is.Equal(len(analyzed), len(files))
			for i, l := range analyzed {
				is.Equal(l.URI, "metricproof://runs/linked/"+files[i])
				is.Equal(l.Name, "linked/"+files[i])
				is.Equal(l.MIMEType, "application/json")
				saved := w.Read(t, "runs/linked/"+files[i])
				is.True(l.Size != nil && *l.Size == int64(len(saved))) // the size on disk
			}
			_, verified := mcptest.CallToolLinks(t, cs, "verify_result", map[string]any{"run_id": "linked"})
			is.Equal(len(verified), 1)
			is.Equal(verified[0].URI, "metricproof://runs/linked/result.json")

			ledgerBefore := len(mcptest.LedgerLines(t, w))
			treeBefore := w.Tree(t)
			for _, l := range append(analyzed, verified...) {
				res, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: l.URI})
				is.NoErr(err)
				is.Equal(len(res.Contents), 1)
				c := res.Contents[0]
				is.Equal(c.URI, l.URI)
				is.Equal(c.MIMEType, "application/json")
				is.Equal(c.Text, string(w.Read(t, "runs/linked/"+path.Base(l.URI)))) // the exact bytes
				is.Equal(c.Blob, nil)
			}
			is.Equal(len(mcptest.LedgerLines(t, w)), ledgerBefore) // a read is not a call
			is.Equal(w.Tree(t), treeBefore)                        // and writes nothing

			_, refused := mcptest.CallToolLinks(t, cs, "verify_result", map[string]any{"run_id": "nope"})
			is.Equal(len(refused), 0) // a refusal links nothing
		})
	}
}

// The one resource template of protocol §9.
func TestTheServerListsOneResourceTemplate(t *testing.T) {
	is := is.New(t)
	cs := session(t, mcptest.NewWorld(t).Service("--output-dir", "runs"), context.Background())
	res, err := cs.ListResourceTemplates(context.Background(), nil)
	is.NoErr(err)
	is.Equal(len(res.ResourceTemplates), 1)
	rt := res.ResourceTemplates[0]
	is.Equal(rt.URITemplate, "metricproof://runs/{run_id}/{file}")
	is.Equal(rt.MIMEType, "application/json")
	is.True(rt.Name != "" && rt.Title != "" && len(rt.Description) > 40)
}

// resources/list gives the result.json of every committed run, sorted by
// run ID, 100 a page; nothing but runs, and an unknown cursor is -32602.
func TestResourcesListEveryCommittedRunAPageAtATime(t *testing.T) {
	is := is.New(t)
	w := mcptest.NewWorld(t)
	svc := w.Service("--output-dir", "runs")
	cs := session(t, svc, context.Background())
	digest := mcptest.DigestOf(t, cs)
	var want []string
	for i := range 205 {
		id := fmt.Sprintf("run-%03d", 204-i) // committed out of order
		is.Equal(mcptest.CallTool(t, cs, "analyze", map[string]any{"expected_source_digest": digest, "run_id": id}).Code(), "")
		want = append([]string{id}, want...)
	}
	w.Write(t, "runs/.pending-0123/result.json", "{}") // a killed writer's pending directory
	w.Write(t, "runs/notes.txt", "not a run")
	w.Write(t, "runs/empty/.keep", "")
	is.Equal(len(mcptest.CallTool(t, cs, "inspect_inputs", nil).RequestID) > 0, true)

	var got []string
	cursor, pages := "", 0
	for {
		res, err := cs.ListResources(context.Background(), &sdk.ListResourcesParams{Cursor: cursor})
		is.NoErr(err)
		pages++
		for _, r := range res.Resources {
			is.Equal(r.URI, "metricproof://runs/"+r.Name+"/result.json")
			is.Equal(r.MIMEType, "application/json")
			is.Equal(r.Size, int64(len(w.Read(t, "runs/"+r.Name+"/result.json"))))
			got = append(got, r.Name)
		}
		if res.NextCursor == "" {
			break
		}
		is.Equal(len(res.Resources), mcp.RunsPerPage) // full pages before the last
		cursor = res.NextCursor
	}
	is.Equal(pages, 3)
	is.Equal(got, want) // every run, sorted, nothing else

	for _, bad := range []string{"bogus", "run-099", "run-099.00", cursor + "0", strings.ToUpper(cursor)} {
		_, err := cs.ListResources(context.Background(), &sdk.ListResourcesParams{Cursor: bad})
		var werr *jsonrpc.Error
		is.True(errors.As(err, &werr))                        // a JSON-RPC error
		is.Equal(werr.Code, int64(jsonrpc.CodeInvalidParams)) // -32602 for an unknown cursor
	}
	// A cursor of another server is unknown to this one.
	other := session(t, w.Service("--output-dir", "runs"), context.Background())
	_, err := other.ListResources(context.Background(), &sdk.ListResourcesParams{Cursor: cursor})
	is.True(err != nil)
}

// Every URI that is not a run file, and every run file that verify's read
// checks refuse, is -32602 with data {"uri": …} as JSON, whatever the URI
// holds; raw lines show the exact bytes the server writes.
func TestABadURIIsRefusedWithItsURIAsJSON(t *testing.T) {
	is := is.New(t)
	w := mcptest.NewWorld(t)
	svc := w.Service("--output-dir", "runs")
	cs := session(t, svc, context.Background())
	is.Equal(mcptest.CallTool(t, cs, "analyze", map[string]any{"expected_source_digest": mcptest.DigestOf(t, cs), "run_id": "r1"}).Code(), "")
	w.Write(t, "runs/big/result.json", strings.Repeat(" ", evidence.MaxSavedBytes+1))
	is.NoErr(w.FS.MkdirAll(mcptest.WSRoot+"/runs/dir/result.json", 0o755))
	uris := []string{
		"", "file:///etc/passwd", "metricproof://runs/", "metricproof://runs/r1", "metricproof://runs/r1/",
		"metricproof://runs/r1/notes.txt", "metricproof://runs/r1/attestation.json", "metricproof://runs/r2/result.json",
		"metricproof://runs/../r1/result.json", "metricproof://runs/r1/../r1/result.json", "metricproof://runs/r1/result.json/",
		"metricproof://runs/r1/result.json?x=1", "metricproof://runs/r1/result.json#top", "metricproof://runs/r%31/result.json",
		"METRICPROOF://runs/r1/result.json", "metricproof://RUNS/r1/result.json", "metricproof://runs/.pending-x/result.json",
		"metricproof://runs/big/result.json", "metricproof://runs/dir/result.json",
		"metricproof://runs/r1/result.json\x7f", "metricproof://runs/\"quoted\"\\/result.json", "metricproof://runs/r1/\u2028\u00e9\U0001F600",
		"metricproof://runs/" + strings.Repeat("a", 65) + "/result.json",
	}
	var lines []string
	lines = append(lines, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, uri := range uris {
		params, _ := json.Marshal(map[string]string{"uri": uri})
		lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":%s}`, i+1, params))
	}
	out := mcptest.RawSession(t, svc, lines...)
	for i, uri := range uris {
		line := lineOf(t, out, i+1)
		var m struct {
			Error struct {
				Code int64           `json:"code"`
				Data json.RawMessage `json:"data"`
			} `json:"error"`
		}
		is.NoErr(json.Unmarshal([]byte(line), &m)) // the whole line is JSON
		is.Equal(m.Error.Code, int64(-32602))      // not found, for uri
		var data map[string]string
		is.NoErr(json.Unmarshal(m.Error.Data, &data)) // data is JSON
		is.Equal(data, map[string]string{"uri": uri}) // holding the URI
	}

	// Through the SDK's client too, which decodes the same error.
	_, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "metricproof://runs/r1/x\x7f"})
	var werr *jsonrpc.Error
	is.True(errors.As(err, &werr))
	is.Equal(werr.Code, int64(-32602))
	is.Equal(string(werr.Data), `{"uri":"metricproof://runs/r1/x`+"\x7f"+`"}`)
}

// A damaged file that is not UTF-8 is answered as a blob of its exact
// bytes, and so is an empty one (an empty text would not be sent), and
// one whose text JSON would write in more than 1.5 times its size
// (protocol §9.6: an answer stays within 1.5 times the 4 MiB limit). A
// file of the same bytes within that bound is text.
func TestAFileThatIsNotUTF8ComesBackAsABlobOfItsBytes(t *testing.T) {
	is := is.New(t)
	w := mcptest.NewWorld(t)
	cs := session(t, w.Service("--output-dir", "runs"), context.Background())
	is.Equal(mcptest.CallTool(t, cs, "analyze", map[string]any{"expected_source_digest": mcptest.DigestOf(t, cs), "run_id": "r1"}).Code(), "")
	for _, tt := range []struct {
		data string
		blob bool
	}{
		{"{\"a\":\"\xff\xfe latin-1 \xe9\"}\n", true},
		{"", true},
		{strings.Repeat("\x01", 1000), true},                              // six bytes each
		{strings.Repeat("<", 1000), true},                                 // six bytes each
		{strings.Repeat(`"`, 1000), true},                                 // two bytes each
		{strings.Repeat(`"`, 500) + strings.Repeat("a", 500), false},      // exactly 1.5 times
		{strings.Repeat(`"`, 501) + strings.Repeat("a", 499), true},       // just past it
		{strings.Repeat("\u2028", 100) + strings.Repeat("a", 299), true},  // six bytes for three: just past 1.5 times
		{strings.Repeat("\u2028", 100) + strings.Repeat("a", 300), false}, // exactly 1.5 times
	} {
		w.Write(t, "runs/r1/receipt.json", tt.data)
		res, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "metricproof://runs/r1/receipt.json"})
		is.NoErr(err)
		c := res.Contents[0]
		is.Equal(c.URI, "metricproof://runs/r1/receipt.json")
		is.Equal(c.MIMEType, "application/json")
		if tt.blob {
			is.Equal(c.Text, "")
			is.Equal(string(c.Blob), tt.data) // the exact bytes
		} else {
			is.Equal(c.Blob, nil)
			is.Equal(c.Text, tt.data) // the exact bytes
		}
	}
}

// failingFs fails every open of one file with EIO, as a bad disk would.
type failingFs struct {
	afero.Fs
	fail string
}

func (f failingFs) Open(name string) (afero.File, error) {
	if name == f.fail {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EIO}
	}
	return f.Fs.Open(name)
}

func (f failingFs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	if name == f.fail {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EIO}
	}
	return f.Fs.OpenFile(name, flag, perm)
}

// A read that fails is -32603, with the URI, and no path in the message.
func TestAReadThatFailsIsAnInternalError(t *testing.T) {
	is := is.New(t)
	w := mcptest.NewWorld(t)
	cs := session(t, w.Service("--output-dir", "runs"), context.Background())
	is.Equal(mcptest.CallTool(t, cs, "analyze", map[string]any{"expected_source_digest": mcptest.DigestOf(t, cs), "run_id": "r1"}).Code(), "")
	failing, err := memfs.New(failingFs{Fs: w.FS, fail: mcptest.WSRoot + "/runs/r1/result.json"}, mcptest.WSRoot)
	is.NoErr(err)
	w.WS = failing
	cs = session(t, w.Service("--output-dir", "runs"), context.Background())
	_, err = cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "metricproof://runs/r1/result.json"})
	var werr *jsonrpc.Error
	is.True(errors.As(err, &werr))
	is.Equal(werr.Code, int64(jsonrpc.CodeInternalError))
	is.Equal(string(werr.Data), `{"uri":"metricproof://runs/r1/result.json"}`)
	is.True(!strings.Contains(werr.Message, mcptest.WSRoot)) // no absolute path
	_, err = cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "metricproof://runs/r1/receipt.json"})
	is.NoErr(err) // the other files still read
}

// protocol §9: the served input schemas are flat, every property with its own
// type, pattern and description, and no combinator or $ref at any depth.
func TestTheServedInputSchemasAreFlat(t *testing.T) {
	is := is.New(t)
	tools, err := mcp.Tools(cli.DefaultListLimit)
	is.NoErr(err)
	for _, tool := range tools {
		data, err := json.Marshal(tool.InputSchema)
		is.NoErr(err)
		var schema map[string]any
		is.NoErr(json.Unmarshal(data, &schema))
		is.Equal(combinatorsIn(schema), []string(nil)) // flat
		props := schema["properties"].(map[string]any)
		for name, p := range props {
			prop := p.(map[string]any)
			is.Equal(prop["type"], "string")                // its own type
			is.True(prop["pattern"] != nil)                 // its own pattern
			is.True(len(prop["description"].(string)) > 20) // its own description
			t.Logf("%s.%s: %v", tool.Name, name, prop)
		}
	}
}

// combinatorsIn lists every allOf, anyOf, oneOf or $ref in a schema.
func combinatorsIn(v any) []string {
	var found []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			switch k {
			case "allOf", "anyOf", "oneOf", "$ref":
				found = append(found, k)
			}
			found = append(found, combinatorsIn(x)...)
		}
	case []any:
		for _, x := range v {
			found = append(found, combinatorsIn(x)...)
		}
	}
	return found
}

// The served outputSchema holds the options in force: the answers of
// every K validate against the schema of that K; with --list-limit 2 the
// analyze answer with a third contribution put back, or without
// truncated, does not.
func TestTheOutputSchemaStatesKAndTruncated(t *testing.T) {
	is := is.New(t)
	w := mcptest.NewWorld(t)
	tools, err := mcp.Tools(2)
	is.NoErr(err)
	schemas := compileOutputSchemas(t, tools)
	cs := session(t, w.Service("--output-dir", "runs", "--list-limit", "2"), context.Background())
	for _, k := range []int{0, 1, 2, 1000} { // the answers of every K validate against its schema
		tools, err := mcp.Tools(k)
		is.NoErr(err)
		own := compileOutputSchemas(t, tools)
		kcs := session(t, mcptest.NewWorld(t).Service("--output-dir", "runs", "--list-limit", fmt.Sprint(k)), context.Background())
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"inspect_inputs", nil},
			{"analyze", map[string]any{"expected_source_digest": mcptest.DigestOf(t, kcs), "run_id": "r"}},
			{"verify_result", map[string]any{"run_id": "r"}},
			{"analyze", map[string]any{"expected_source_digest": mcptest.DigestOf(t, kcs), "run_id": "r"}},
		} {
			res, err := kcs.CallTool(context.Background(), &sdk.CallToolParams{Name: c.tool, Arguments: c.args})
			is.NoErr(err)
			is.NoErr(validate(own[c.tool], res.Content[0].(*sdk.TextContent).Text)) // K, tool
		}
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "analyze", Arguments: map[string]any{"expected_source_digest": mcptest.DigestOf(t, cs), "run_id": "k2"}})
	is.NoErr(err)
	text := res.Content[0].(*sdk.TextContent).Text
	is.True(strings.HasSuffix(text, `"truncated":{"/result/revenue/contributions":5}}`))
	is.NoErr(validate(schemas["analyze"], text))

	var body map[string]any
	is.NoErr(json.Unmarshal([]byte(text), &body))
	rev := body["result"].(map[string]any)["revenue"].(map[string]any)
	rev["contributions"] = append(rev["contributions"].([]any), map[string]any{"transaction_id": "T3", "net_revenue": "50"})
	three, _ := json.Marshal(body)
	is.True(validate(schemas["analyze"], string(three)) != nil) // maxItems 2
	rev["contributions"] = rev["contributions"].([]any)[:2]
	delete(body, "truncated")
	none, _ := json.Marshal(body)
	is.True(validate(schemas["analyze"], string(none)) != nil) // truncated is required
}

func compileOutputSchemas(t *testing.T, tools []*sdk.Tool) map[string]*jsonschema.Schema {
	t.Helper()
	out := map[string]*jsonschema.Schema{}
	for _, tool := range tools {
		data, err := json.Marshal(tool.OutputSchema)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft7)
		if err := c.AddResource("mem://"+tool.Name, doc); err != nil {
			t.Fatal(err)
		}
		if out[tool.Name], err = c.Compile("mem://" + tool.Name); err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
	}
	return out
}

func validate(s *jsonschema.Schema, text string) error {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return err
	}
	return s.Validate(v)
}

// signingKey writes a fresh Ed25519 private key, PKCS#8 PEM, mode 0600, on
// the real disk (the key reader reads operator paths there) and returns
// its path.
func signingKey(t *testing.T) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// lineOf returns the raw line of the response with the given id.
func lineOf(t *testing.T, lines []string, id int) string {
	t.Helper()
	for _, l := range lines {
		var m struct {
			ID *int `json:"id"`
		}
		if json.Unmarshal([]byte(l), &m) == nil && m.ID != nil && *m.ID == id {
			return l
		}
	}
	t.Fatalf("no response %d in %q", id, lines)
	return ""
}

// The served schemas keep to what a host's draft-07 validator knows (the
// keywords contracts' own check allows, and propertyNames for truncated's
// pointers), at every K.
func TestTheServedSchemasUseOnlyDraft07Keywords(t *testing.T) {
	allowed := []string{"type", "properties", "required", "additionalProperties", "items", "enum", "const",
		"pattern", "minimum", "maximum", "minItems", "maxItems", "minLength", "maxLength", "uniqueItems",
		"anyOf", "oneOf", "allOf", "not", "if", "then", "else", "title", "description", "propertyNames"}
	for _, k := range []int{0, 10, 1000} {
		tools, err := mcp.Tools(k)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range tools {
			for kind, s := range map[string]any{"input": tool.InputSchema, "output": tool.OutputSchema} {
				data, _ := json.Marshal(s)
				var schema any
				if err := json.Unmarshal(data, &schema); err != nil {
					t.Fatal(err)
				}
				for _, kw := range keywordsIn(schema, false) {
					if !slices.Contains(allowed, kw) {
						t.Errorf("K=%d %s %sSchema uses %q", k, tool.Name, kind, kw)
					}
				}
			}
		}
	}
}

// keywordsIn lists the keywords of a schema and its subschemas; the names
// under "properties" are property names, not keywords.
func keywordsIn(v any, names bool) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if !names {
				out = append(out, k)
			}
			out = append(out, keywordsIn(x, k == "properties" && !names)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, keywordsIn(x, false)...)
		}
	}
	return out
}

// Under the 2026-07-28 revision a read answers as every other request
// does: its result says "resultType":"complete" (the TypeScript client v2
// refuses a read result without it), and so does a read of a session that
// negotiated that revision; an older session's read has none.
func TestAReadCarriesTheResultTypeOfItsRevision(t *testing.T) {
	is := is.New(t)
	w := mcptest.NewWorld(t)
	svc := w.Service("--output-dir", "runs")
	cs := session(t, svc, context.Background())
	is.Equal(mcptest.CallTool(t, cs, "analyze", map[string]any{"expected_source_digest": mcptest.DigestOf(t, cs), "run_id": "r1"}).Code(), "")
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`
	stateless := mcptest.RawSession(t, svc,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"metricproof://runs/r1/checksums.json",`+meta+`}}`,
		`{"jsonrpc":"2.0","id":2,"method":"resources/list","params":{`+meta+`}}`)
	legacy := mcptest.RawSession(t, svc,
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"metricproof://runs/r1/checksums.json"}}`)
	want, err := w.FS.Open(mcptest.WSRoot + "/runs/r1/checksums.json")
	is.NoErr(err)
	defer want.Close()
	saved, err := io.ReadAll(want)
	is.NoErr(err)
	for _, tt := range []struct {
		name       string
		lines      []string
		resultType string
	}{
		{"2026-07-28 read", stateless, "complete"},
		{"2025-11-25 read", legacy, ""},
	} {
		var res struct {
			ResultType *string `json:"resultType"`
			Contents   []struct {
				Text string `json:"text"`
			} `json:"contents"`
		}
		is.NoErr(json.Unmarshal(resultOf(t, tt.lines, 1), &res))
		got := ""
		if res.ResultType != nil {
			got = *res.ResultType
		}
		is.Equal(got, tt.resultType)                  // the revision's resultType
		is.Equal(len(res.Contents), 1)                // one content
		is.Equal(res.Contents[0].Text, string(saved)) // the exact bytes
	}
	var list struct {
		ResultType string `json:"resultType"`
	}
	is.NoErr(json.Unmarshal(resultOf(t, stateless, 2), &list))
	is.Equal(list.ResultType, "complete")
}

// watchedRuns tells, by run ID, each time a run is read.
type watchedRuns struct {
	ports.EvidenceStore
	reads chan string
}

func (w watchedRuns) ReadRun(dir, runID string, names []string, limitBytes int64) (ports.SavedRun, error) {
	w.reads <- runID
	return w.EvidenceStore.ReadRun(dir, runID, names, limitBytes)
}

// protocol §9.8: a read keeps its compute slot until its answer is
// written. With one slot, a second read does not start while the first
// one's answer waits for a client that has not read it; it starts once
// the answer is read. (Before, the slot went back as soon as the file was
// read, and answers waiting to be written piled up in memory.) The 200 ms
// below can only make the test miss the fault, never fail a server that
// has none.
func TestAReadKeepsItsSlotUntilItsAnswerIsWritten(t *testing.T) {
	is := is.New(t)
	w := mcptest.NewWorld(t)
	cs := session(t, w.Service("--output-dir", "runs"), context.Background())
	is.Equal(mcptest.CallTool(t, cs, "analyze", map[string]any{"expected_source_digest": mcptest.DigestOf(t, cs), "run_id": "r1"}).Code(), "")
	reads := make(chan string, 2)
	procs := runtime.GOMAXPROCS(1) // one compute slot
	svc := w.ServiceOver(func(o app.Options) (app.Ports, io.Closer, error) {
		p, c, err := w.Wire(o)
		p.Evidence = watchedRuns{EvidenceStore: p.Evidence, reads: reads}
		return p, c, err
	}, "--output-dir", "runs")
	runtime.GOMAXPROCS(procs)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_ = mcp.ServeStdio(svc.Calls, svc.ListLimit, "test", inR, outW, context.Background())
		outW.Close()
	}()
	out := bufio.NewReader(outR)
	send := func(l string) {
		_, err := io.WriteString(inW, l+"\n")
		is.NoErr(err)
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	_, err := out.ReadString('\n')
	is.NoErr(err)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"metricproof://runs/r1/result.json"}}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"metricproof://runs/r1/receipt.json"}}`)
	is.Equal(<-reads, "r1") // the first read has its slot
	// One byte straight from the pipe: its answer is being written, and
	// the write cannot finish before the rest is read.
	is.Equal(out.Buffered(), 0)
	_, err = io.ReadFull(outR, make([]byte, 1))
	is.NoErr(err)
	select {
	case <-reads:
		t.Fatal("the second read started while the first one's answer was not yet written")
	case <-time.After(200 * time.Millisecond):
	}
	first, err := out.ReadString('\n')
	is.NoErr(err)
	is.True(strings.HasPrefix(first, `"jsonrpc":"2.0","id":1,`)) // the rest of the first answer
	is.Equal(<-reads, "r1")                                      // the second read starts once the first answer is out
	second, err := out.ReadString('\n')
	is.NoErr(err)
	is.True(strings.Contains(second, `"id":2`))
	inW.Close()
	<-ended
}

// With one compute slot, every kind of read that fails still gives its
// slot back once answered: after a read of a missing run, a bad run ID, a
// file a run cannot hold, a missing attestation, a run ID too long and a
// URI of another form, a read of a good file is still answered.
func TestEveryReadGivesItsSlotBack(t *testing.T) {
	is := is.New(t)
	w := mcptest.NewWorld(t)
	cs := session(t, w.Service("--output-dir", "runs"), context.Background())
	is.Equal(mcptest.CallTool(t, cs, "analyze", map[string]any{"expected_source_digest": mcptest.DigestOf(t, cs), "run_id": "r1"}).Code(), "")
	procs := runtime.GOMAXPROCS(1) // one compute slot
	svc := w.Service("--output-dir", "runs")
	runtime.GOMAXPROCS(procs)
	uris := []string{
		"metricproof://runs/nope/result.json", "metricproof://runs/-x/result.json", "metricproof://runs/r1/notes.json",
		"metricproof://runs/r1/attestation.json", "metricproof://runs/" + strings.Repeat("a", 65) + "/result.json",
		"metricproof://runs/r1", "metricproof://runs/r1/result.json",
	}
	lines := []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	}
	for i, uri := range uris {
		lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":%q}}`, i+1, uri))
	}
	done := make(chan []string, 1)
	go func() { done <- mcptest.RawSession(t, svc, lines...) }()
	var out []string
	select {
	case out = <-done:
	case <-time.After(time.Minute): // a hang guard only: a slot kept forever stops every later read
		t.Fatal("the reads were not all answered")
	}
	for i := range uris[:len(uris)-1] {
		is.True(strings.Contains(lineOf(t, out, i+1), `"code":-32602`)) // not found
	}
	is.True(strings.Contains(lineOf(t, out, len(uris)), `"contents"`)) // the last read is answered
}
