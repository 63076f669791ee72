package report_test

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/report"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/evidence"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/domain"
)

// hostileValues are values that would inject markup, break a line or a
// table cell, or hide text, if a page wrote them as they are.
func hostileValues() []struct{ name, value string } {
	return []struct{ name, value string }{
		{"script", `<script>alert(1)</script>`},
		{"attribute breakout", `"><img src=x onerror=alert(1)>`},
		{"style breakout", `</style><style>body{display:none}</style>`},
		{"line separator", "a\u2028b\u2029c"},
		{"newline", "first\n# injected heading\n"},
		{"carriage return and NUL", "a\r\x00b"},
		{"backticks and pipes", "`code` | cell | `"},
		{"emphasis and links", `**bold** _em_ [link](http://x) ![img](x) <http://x> ~~s~~`},
		{"entities", `&amp; &lt; &#60;`},
		{"right-to-left override", "abc\u202Edcba"},
		{"invalid UTF-8", "a\xffb"},
		{"backslash", `\` + "`" + `\*`},
		{"comment", `<!-- x --> ]]> <![CDATA[`},
	}
}

// reviewOf is a review whose every value is v: a verified one with every
// section, or one with a fault.
func reviewOf(v string, verified bool) app.Review {
	p := func(s string) *string { return &s }
	yes := true
	res := &domain.Result{
		DefinitionID: v, SourceDigest: v, Synthetic: true,
		Conversion:   domain.Conversion{Successes: 1, Eligible: 2, Rate: p(v), Method: v},
		Revenue:      domain.Revenue{Units: v, KnownSubtotal: v, KnownRows: 1, TotalRows: 2, CompleteTotal: p(v)},
		CustomerJoin: domain.CustomerJoin{Status: v, DuplicateKeys: []string{v, v}, UnmatchedKeys: []string{v}, JoinedOutput: v},
		Release:      domain.Release{Blockers: []domain.Blocker{{Code: v, Message: v, Subjects: []string{v}}}, HumanApproval: v},
	}
	rc := &evidence.Receipt{
		RunID: v, DefinitionID: v, SourceDigest: v, EngineSHA256: v, CreatedAt: v, ResultSHA256: v,
		Sources: map[string]string{},
		Build:   evidence.Build{GoVersion: p(v), ModuleVersion: p(v), VCSRevision: p(v), VCSModified: &yes},
		Signer:  &evidence.Signer{KeyID: v, PublicKey: v},
	}
	for _, name := range domain.SourceNames() {
		rc.Sources[name] = v
	}
	r := app.Review{
		RunID:      v,
		Checks:     []app.CheckOutcome{{Name: v, Passed: true}, {Name: v}},
		Ledger:     &app.LedgerEvidence{Records: 3, BadLine: 2, Record: &app.LedgerEntry{Line: 1, Seq: 1, Time: v, Transport: v, ResultSHA256: v}},
		Disclaimer: []app.Disclaimed{{Field: v, Value: v}},
	}
	if verified {
		r.Result, r.Receipt = res, rc
	} else {
		r.Fault = &protocol.Error{Code: protocol.Code(v), Message: v}
	}
	return r
}

// tags lists an HTML document's markup: every tag and comment, in order.
var tags = regexp.MustCompile(`<[^>]*>`)

// mdMarkup is a Markdown page's markup, line by line: each line's first
// character (which decides whether it opens a block), then the inline
// markup characters left once backslash escapes and code spans are read
// as CommonMark reads them (an escaped backtick opens no code span; in a
// code span a backslash is literal). A value written literally adds
// nothing.
func mdMarkup(page string) []string {
	var out []string
	for _, line := range strings.Split(page, "\n") {
		first, _ := utf8.DecodeRuneInString(line)
		markup := []rune{first, ' '}
		runes := []rune(line)
		for i := 0; i < len(runes); i++ {
			switch r := runes[i]; {
			case r == '\\':
				i++ // the escaped character is literal
			case r == '`':
				end := i + 1
				for end < len(runes) && runes[end] != '`' {
					end++
				}
				i = end // the code span is literal
			case strings.ContainsRune("\\`*_[]<>#!|~&$", r):
				markup = append(markup, r)
			}
		}
		out = append(out, string(markup))
	}
	return out
}

func TestNoValueCanInjectMarkup(t *testing.T) {
	for _, verified := range []bool{true, false} {
		// A plain value: the page's own markup, and nothing else.
		var plainMD, plainHTML bytes.Buffer
		if err := report.Markdown(&plainMD, reviewOf("X", verified), readmeSettings()); err != nil {
			t.Fatal(err)
		}
		if err := report.HTML(&plainHTML, reviewOf("X", verified), readmeSettings()); err != nil {
			t.Fatal(err)
		}
		for _, tt := range hostileValues() {
			t.Run(tt.name, func(t *testing.T) {
				is := is.New(t)
				var md, page bytes.Buffer
				is.NoErr(report.Markdown(&md, reviewOf(tt.value, verified), readmeSettings()))
				is.NoErr(report.HTML(&page, reviewOf(tt.value, verified), readmeSettings()))

				is.Equal(tags.FindAllString(page.String(), -1), tags.FindAllString(plainHTML.String(), -1)) // the same elements, no more
				is.Equal(mdMarkup(md.String()), mdMarkup(plainMD.String()))                                 // the same lines, the same markup

				for _, out := range []string{md.String(), page.String()} {
					is.True(!strings.ContainsAny(out, "\u2028\u2029\u202E\r\x00")) // shown as code points instead
					is.True(strings.ToValidUTF8(out, "") == out)
				}
				is.True(!strings.Contains(strings.Join(mdMarkup(md.String()), ""), "<")) // no raw HTML in the Markdown at all
			})
		}
	}
}

func TestHiddenCharactersAreShownAsCodePoints(t *testing.T) {
	is := is.New(t)
	var md, page bytes.Buffer
	is.NoErr(report.Markdown(&md, reviewOf("a\u2028b\u202Ec\nd", false), readmeSettings()))
	is.NoErr(report.HTML(&page, reviewOf("a\u2028b\u202Ec\nd", false), readmeSettings()))
	is.True(strings.Contains(md.String(), "aU+2028bU+202EcU+000Ad"))
	is.True(strings.Contains(page.String(), "aU&#43;2028bU&#43;202EcU&#43;000Ad")) // html/template writes + as &#43;
	page.Reset()
	is.NoErr(report.HTML(&page, reviewOf(`<script>"x"</script>`, false), readmeSettings()))
	is.True(strings.Contains(page.String(), "&lt;script&gt;&#34;x&#34;&lt;/script&gt;"))
}

// Every invisible format character is shown as its code point, not only
// the few best known: the Arabic letter mark is a bidirectional control
// like U+202E, and the tag characters (U+E0000 block) hide whole ASCII
// text in a value that looks short ("ASCII smuggling").
func TestEveryInvisibleFormatCharacterIsShown(t *testing.T) {
	tests := []struct{ name, value, shown string }{
		{"right-to-left override", "a\u202Eb", "aU+202Eb"},
		{"Arabic letter mark", "a\u061Cb", "aU+061Cb"},
		{"Mongolian vowel separator", "a\u180Eb", "aU+180Eb"},
		{"soft hyphen", "a\u00ADb", "aU+00ADb"},
		{"interlinear annotation", "a\uFFF9b\uFFFBc", "aU+FFF9bU+FFFBc"},
		{"tag characters", "a\U000E0041\U000E0042b", "aU+E0041U+E0042b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var md, page bytes.Buffer
			is.NoErr(report.Markdown(&md, reviewOf(tt.value, false), readmeSettings()))
			is.NoErr(report.HTML(&page, reviewOf(tt.value, false), readmeSettings()))
			is.True(strings.Contains(md.String(), tt.shown))
			is.True(strings.Contains(page.String(), strings.ReplaceAll(tt.shown, "+", "&#43;")))
			for _, out := range []string{md.String(), page.String()} {
				is.True(!strings.Contains(out, tt.value)) // never written as it is
			}
		})
	}
}

// No value becomes a link in Markdown: GitHub's autolinks make one of any
// http://, https:// or ftp:// URL, www. name or e-mail address in text,
// unless an escape breaks it. A forged receipt's go_version is text in the
// rebuild sentence, where "build it with https://…" would be a link to
// follow. Outside code spans every ":" before "//", "." after "www" and
// "@" is escaped.
func TestNoValueBecomesAnAutolink(t *testing.T) {
	autolink := regexp.MustCompile(`(?i)(^|[^\\]):\/\/|www\.|(^|[^\\])@`)
	for _, v := range []string{"https://evil.example/get-go", "HTTP://evil.example", "ftp://evil.example", "www.evil.example", "WWW.evil.example", "x@evil.example", "https://evil.example/|", "www.evil.example `x`"} {
		t.Run(v, func(t *testing.T) {
			is := is.New(t)
			var md bytes.Buffer
			is.NoErr(report.Markdown(&md, reviewOf(v, true), readmeSettings()))
			for _, line := range strings.Split(md.String(), "\n") {
				is.True(!autolink.MatchString(outsideCode(line))) // no autolink in the text
			}
		})
	}
}

// outsideCode is a Markdown line without its code spans, as mdMarkup
// reads them (an escaped backtick opens none).
func outsideCode(line string) string {
	var b strings.Builder
	runes := []rune(line)
	for i := 0; i < len(runes); i++ {
		switch r := runes[i]; r {
		case '\\':
			b.WriteRune(r)
			if i+1 < len(runes) {
				i++
				b.WriteRune(runes[i])
			}
		case '`':
			end := i + 1
			for end < len(runes) && runes[end] != '`' {
				end++
			}
			i = end
			b.WriteString(" ")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// The HTML page stands alone: no script, no external resource, one
// inline style sheet with a print style.
func TestTheHTMLPageIsSelfContained(t *testing.T) {
	is := is.New(t)
	var page bytes.Buffer
	is.NoErr(report.HTML(&page, reviewOf("X", true), readmeSettings()))
	out := page.String()
	is.True(strings.HasPrefix(out, "<!DOCTYPE html>\n"))
	for _, never := range []string{"<script", "<link", "<img", "<iframe", "@import", "url(", "src=", "href=", "http:", "https:"} {
		is.True(!strings.Contains(out, never))
	}
	is.Equal(strings.Count(out, "<style>"), 1)
	is.True(strings.Contains(out, "@media print"))
}

// Every check verify_result runs, and every statement of the verification
// block, is said in words: none falls back to its bare name.
func TestEveryCheckAndStatementIsExplained(t *testing.T) {
	is := is.New(t)
	r := reviewOf("X", true)
	r.Checks = nil
	for _, name := range append(app.Checks(), app.LedgerCheckName) {
		r.Checks = append(r.Checks, app.CheckOutcome{Name: name, Passed: true})
	}
	r.Disclaimer = app.Disclaimer()
	var md bytes.Buffer
	is.NoErr(report.Markdown(&md, r, readmeSettings()))
	rows := map[string]bool{}
	for _, line := range strings.Split(md.String(), "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) == 3 && strings.HasPrefix(cells[0], "| `") {
			rows[strings.Trim(cells[0], "| `")] = len(cells[2]) > 40 // a sentence, not a name
		}
	}
	for _, name := range append(app.Checks(), app.LedgerCheckName) {
		is.True(rows[name]) // a check explained
	}
	for _, d := range app.Disclaimer() {
		is.True(rows[d.Field]) // a statement explained
	}
	is.Equal(len(app.Disclaimer()), 5)
}

// FuzzNoValueInjectsMarkup: whatever a value holds, both pages keep the
// markup of a page of plain values, and show no hidden character.
func FuzzNoValueInjectsMarkup(f *testing.F) {
	for _, v := range hostileValues() {
		f.Add(v.value, true)
	}
	plain := map[bool][2]string{}
	for _, verified := range []bool{true, false} {
		var md, page bytes.Buffer
		if report.Markdown(&md, reviewOf("X", verified), readmeSettings()) != nil || report.HTML(&page, reviewOf("X", verified), readmeSettings()) != nil {
			f.Fatal("a plain page did not render")
		}
		plain[verified] = [2]string{md.String(), page.String()}
	}
	f.Fuzz(func(t *testing.T, v string, verified bool) {
		var md, page bytes.Buffer
		if err := report.Markdown(&md, reviewOf(v, verified), readmeSettings()); err != nil {
			t.Fatal(err)
		}
		if err := report.HTML(&page, reviewOf(v, verified), readmeSettings()); err != nil {
			t.Fatal(err)
		}
		if got, want := mdMarkup(md.String()), mdMarkup(plain[verified][0]); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("the Markdown's markup changed with %q:\n%s", v, md.String())
		}
		if got, want := tags.FindAllString(page.String(), -1), tags.FindAllString(plain[verified][1], -1); strings.Join(got, "") != strings.Join(want, "") {
			t.Errorf("the HTML's elements changed with %q", v)
		}
		for _, out := range []string{md.String(), page.String()} {
			if strings.ContainsFunc(out, func(r rune) bool { return r != '\n' && (r < 0x20 || r == 0x2028 || r == 0x2029 || r == 0x202E) }) || !utf8.ValidString(out) {
				t.Errorf("a hidden character or invalid UTF-8 reached the page with %q", v)
			}
		}
	})
}

// A blocker lists its first 20 subjects and counts the rest; a run with
// no one eligible says there is no rate, and a complete total is shown.
func TestSubjectsAreCutAtTwenty(t *testing.T) {
	is := is.New(t)
	r := reviewOf("X", true)
	var ids []string
	for i := range 25 {
		ids = append(ids, "T"+string(rune('A'+i)))
	}
	r.Result.Release.Blockers = []domain.Blocker{{Code: domain.BlockerMissingPrice, Message: "m", Subjects: ids}}
	r.Result.Conversion.Rate = nil
	total := "12.5"
	r.Result.Revenue.CompleteTotal = &total
	var md bytes.Buffer
	is.NoErr(report.Markdown(&md, r, readmeSettings()))
	out := md.String()
	is.True(strings.Contains(out, "| `missing_price` | 25 | "+strings.Join(ids[:20], ", ")+", and 5 more | m |"))
	is.True(!strings.Contains(out, "TU")) // the 21st
	is.True(strings.Contains(out, "| Conversion rate | none: no one was eligible, so there is no rate |"))
	is.True(strings.Contains(out, "| Revenue, complete total | 12.5 X |"))
}

// The evidence names the ledger's record of the run, says when none names
// it, and says when one names the run's ID with another result: then the
// run on disk is not the one that analyze committed, and "no record names
// this run" would be false.
func TestTheLedgerRecordIsSaidAsItIs(t *testing.T) {
	entry := &app.LedgerEntry{Line: 7, Seq: 7, Time: "2026-01-02T03:04:05Z", Transport: "stdio", ResultSHA256: strings.Repeat("a", 64)}
	tests := []struct {
		name          string
		record, other *app.LedgerEntry
		want, never   string
	}{
		{"the record of the run", entry, nil, "line 7, seq 7: the analyze that made this run", "not recorded"},
		{"no record", nil, nil, "not recorded: none of the ledger", "line 7"},
		{"a record of another result", nil, entry, "not recorded: line 7, seq 7 records an analyze of this run ID with another result", "none of the ledger"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			r := reviewOf("X", true)
			r.Ledger = &app.LedgerEvidence{Verified: true, Records: 9, Record: tt.record, Other: tt.other}
			var md, page bytes.Buffer
			is.NoErr(report.Markdown(&md, r, readmeSettings()))
			is.NoErr(report.HTML(&page, r, readmeSettings()))
			for _, out := range []string{md.String(), page.String()} {
				is.True(strings.Contains(out, tt.want))
				is.True(!strings.Contains(out, tt.never))
			}
		})
	}
}

// A value with no break in it (a forged build fact of 4 MiB) wraps in the
// HTML page instead of widening it past the screen and the printed page:
// the style sheet lets the paragraphs and the value cells break anywhere
// (seen in Chromium: with the rule for code alone, a 400-character value
// in the rebuild sentence made the page scroll sideways).
func TestLongValuesWrapInTheHTMLPage(t *testing.T) {
	is := is.New(t)
	var page bytes.Buffer
	is.NoErr(report.HTML(&page, reviewOf(strings.Repeat("W", 400)+"|", true), readmeSettings()))
	style := regexp.MustCompile(`(?s)<style>(.*)</style>`).FindStringSubmatch(page.String())
	is.True(style != nil)
	rule := regexp.MustCompile(`(?m)^([^{}@]*)\{[^}]*overflow-wrap: anywhere;`).FindStringSubmatch(style[1])
	is.True(rule != nil)
	selectors := strings.Split(rule[1], ",")
	for i := range selectors {
		selectors[i] = strings.TrimSpace(selectors[i])
	}
	for _, want := range []string{"p", "h1", "td:last-child"} {
		is.True(slices.Contains(selectors, want)) // breaks anywhere
	}
}
