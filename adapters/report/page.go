// Package report renders the reviewer's page of protocol §13: one page, for
// the person who must decide on a run's release, of what "tool-runner
// report" found. It is fed the plain values of [app.Review] and writes
// Markdown ([Markdown]) or one self-contained HTML5 document ([HTML]).
//
// Both formats render one page model, built here from the review: the
// same sections, sentences and values in the same order. Every value is
// escaped for its format, and every character that could hide or rearrange
// text (control characters, line and paragraph separators, bidirectional
// controls) is shown as its code point (U+2028) instead.
// The page holds no time of printing: the same review gives the same bytes.
package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/metricproof/metricproof/adapters/internal/rebuild"
	"github.com/metricproof/metricproof/app"
	"github.com/metricproof/metricproof/app/evidence"
	"github.com/metricproof/metricproof/app/protocol"
	"github.com/metricproof/metricproof/domain"
)

// BuildCommand is README's build command, which the rebuild recipe names.
const BuildCommand = `CGO_ENABLED=0 go build -buildvcs=true -trimpath -ldflags="-s -w" -o bin/tool-runner ./cmd/tool-runner`

// RebuildScript is the auditor's recipe, which the evidence names.
const RebuildScript = "docs/rebuild.sh"

// maxSubjects is how many subjects of each blocker the page lists (protocol §13).
const maxSubjects = 20

// page is the format-neutral page: a verdict and its sections.
type page struct {
	// Title is the verdict as plain text; Verdict the same as spans.
	Title   string
	Verdict []span
	// Remedy, when set, says under the verdict what to do about its fault.
	Remedy   []span
	Verified bool
	// Eligible is the release verdict of a run that verified: the page is
	// green only when it is set as well.
	Eligible bool
	Sections []section
}

type section struct {
	Heading string
	Blocks  []block
}

// block is a paragraph, or a table when Table is set.
type block struct {
	Para  []span
	Table *table
}

type table struct {
	Head []string
	Rows [][]span // one span a cell
}

// span is a piece of text: plain, monospace (digests, IDs, commands) or
// strong. Text is never markup.
type span struct {
	Text   string
	Code   bool
	Strong bool
}

func txt(s string) span  { return span{Text: s} }
func code(s string) span { return span{Text: s, Code: true} }

func para(spans ...span) block { return block{Para: spans} }

// newPage builds the page of protocol §13 from a review, its sections in the
// order the protocol lists them. running is the build settings of the
// engine running the report: a run that verified was made by that very
// engine (engine_unchanged), so they say whether the run's engine can be
// rebuilt.
func newPage(r app.Review, running map[string]string) page {
	p := page{Verified: r.Verified()}
	if p.Verified {
		// The release verdict beside the integrity verdict, as prominent:
		// "verified" alone read as "fine" to a hurried reviewer.
		rel := r.Result.Release
		p.Eligible = rel.Eligible
		release := span{Text: "release: eligible", Strong: true}
		if !rel.Eligible {
			release = span{Text: "release: not eligible", Strong: true}
		}
		p.Verdict = []span{txt("Run "), code(r.RunID), txt(": verified — "), release}
		if !rel.Eligible {
			p.Verdict = append(p.Verdict, txt(" ("+count(len(rel.Blockers), "blocker", "blockers")+")"))
		}
	} else {
		where := ""
		if r.Fault.Code == protocol.LedgerTampered && r.FaultLine > 0 {
			where = fmt.Sprintf(" at ledger line %d", r.FaultLine)
		}
		message := r.Fault.Message
		if r.Fault.Code == protocol.EngineChanged {
			// The page says what to do in a paragraph of its own
			// (engineChanged), in a reviewer's terms: the verdict keeps
			// the fact.
			message = "the running engine is not the one that made run " + r.RunID
		}
		p.Verdict = []span{txt("Run "), code(r.RunID), txt(": do not rely on this run — "), code(string(r.Fault.Code)), txt(where + ": " + message)}
	}
	for _, s := range p.Verdict {
		p.Title += s.Text
	}
	if !p.Verified && r.Fault.Code == protocol.EngineChanged {
		p.Remedy = engineChanged()
	}
	if p.Verified {
		p.Sections = append(p.Sections, numbers(r), release(r))
	}
	p.Sections = append(p.Sections, checked(r), evidenceSection(r, running), unproven(r))
	return p
}

// engineChanged says what to do when the engine running the report is not
// the one that made the run: verify with that engine, or rebuild it from
// the receipt. The demo's runs are the common case: go run builds another
// engine than README's command.
func engineChanged() []span {
	return []span{
		span{Text: "What to do:", Strong: true},
		txt(" this run was made by another engine than the one running this report, so it cannot be checked here. " +
			"Report on it with the engine that made it: for a run of the demo, or of any "),
		code("go run ./cmd/tool-runner"),
		txt(", run "),
		code("go run ./cmd/tool-runner report"),
		txt(" with the same options in the same checkout; for a run of a built binary, that binary. " +
			"Or rebuild that engine from the run's receipt with "),
		code(RebuildScript),
		txt(" (it needs a receipt that names a VCS revision) and report with the rebuilt engine."),
	}
}

// numbers is section 2: the run's figures.
func numbers(r app.Review) section {
	res := r.Result
	c, rev, join := res.Conversion, res.Revenue, res.CustomerJoin
	rate := txt("none: no one was eligible, so there is no rate")
	if c.Rate != nil {
		rate = code(*c.Rate)
	}
	method := c.Method
	if method == domain.MethodPooled {
		method = "pooled denominator: the successes of all groups over the eligible of all groups"
	}
	units := words(rev.Units)
	complete := fmt.Sprintf("none: %s no known price, so the total is unknown", count(rev.TotalRows-rev.KnownRows, "row has", "rows have"))
	if rev.CompleteTotal != nil {
		complete = grouped(*rev.CompleteTotal) + " " + units
	}
	rows := [][]span{
		{txt("Conversion"), txt(fmt.Sprintf("%s successes of %s eligible", groupedInt(c.Successes), groupedInt(c.Eligible)))},
		{txt("Conversion rate"), rate},
		{txt("Method"), txt(method)},
		{txt("Revenue, known subtotal"), txt(grouped(rev.KnownSubtotal) + " " + units)},
		{txt("Rows with a known price"), txt(fmt.Sprintf("%s of %s", groupedInt(int64(rev.KnownRows)), groupedInt(int64(rev.TotalRows))))},
		{txt("Revenue, complete total"), txt(complete)},
		{txt("Units"), txt(units)},
		{txt("Customer join"), txt(fmt.Sprintf("%s; keys more than once in customers.csv: %s; transaction customer IDs with no customer: %s",
			join.Status, subjects(join.DuplicateKeys), subjects(join.UnmatchedKeys)))},
	}
	s := section{Heading: "The numbers", Blocks: []block{{Table: &table{Head: []string{"Figure", "Value"}, Rows: rows}}}}
	if res.Synthetic {
		// As docs/data.md says it: "synthetic" describes the contract, not
		// the data, which is whoever supplied the sources'.
		s.Blocks = append(s.Blocks, para(txt("These figures follow from the four sources' bytes by the formulas of "), code(res.DefinitionID),
			txt(", a fixed demonstration contract that no one has certified for a decision (that is what \"synthetic\" says: of the contract, not of the data, "+
				"which is the operator's). Its amounts are in fictional currency units: the program attaches no currency and converts none, "+
				"so they are in whatever currency the unit prices were written in. Amounts here are grouped by thousands for reading; "+
				"result.json holds them exact and ungrouped.")))
	}
	return s
}

// release is section 3: eligibility, the blockers, and approval.
func release(r app.Review) section {
	rel := r.Result.Release
	s := section{Heading: "Release"}
	if rel.Eligible {
		s.Blocks = append(s.Blocks, para(span{Text: "Release: eligible", Strong: true}, txt(" — no blocker.")))
	} else {
		s.Blocks = append(s.Blocks, para(span{Text: "Release: not eligible", Strong: true}, txt(" — "+count(len(rel.Blockers), "blocker", "blockers")+".")))
	}
	if len(rel.Blockers) > 0 {
		t := &table{Head: []string{"Blocker", "Count", "Subjects (the first 20)", "What it means"}}
		for _, b := range rel.Blockers {
			t.Rows = append(t.Rows, []span{code(b.Code), txt(strconv.Itoa(len(b.Subjects))), txt(subjects(b.Subjects)), txt(b.Message)})
		}
		s.Blocks = append(s.Blocks, block{Table: t})
	}
	s.Blocks = append(s.Blocks, para(span{Text: "Human approval: not granted", Strong: true}, txt(" — this program never grants it. Release is a person's decision.")))
	return s
}

// checked is section 4: every check run, ending at the failing one.
func checked(r app.Review) section {
	s := section{Heading: "What was checked"}
	if len(r.Checks) == 0 {
		s.Blocks = append(s.Blocks, para(txt("No check ran: the fault above came before the first.")))
		return s
	}
	t := &table{Head: []string{"Check", "Outcome", "What it checks"}}
	for _, c := range r.Checks {
		outcome := span{Text: "failed", Strong: true}
		if c.Passed {
			outcome = txt("passed")
		}
		t.Rows = append(t.Rows, []span{code(c.Name), outcome, txt(checkMeaning(c.Name, r.TrustedKey))})
	}
	s.Blocks = append(s.Blocks, block{Table: t})
	if !r.Verified() {
		s.Blocks = append(s.Blocks, para(txt("Checking stopped at the first fault; the checks after it were not run.")))
	}
	return s
}

// checkMeaning says in words what a check makes sure of.
func checkMeaning(name string, trusted bool) string {
	switch name {
	case "run_present":
		return "The run's directory and its three files (result.json, receipt.json, checksums.json) are there."
	case "saved_files_valid":
		return "Each saved file is a regular file of at most 4 MiB holding strict JSON of its expected shape, and the run holds nothing else."
	case "receipt_bound":
		return "The receipt's bytes match the checksum file, and it names this run, this protocol and this definition, with a source digest that matches its own source hashes."
	case "result_bound":
		return "The result's bytes match the checksum file and the receipt, and it names the receipt's sources and definition."
	case "signature_valid":
		if trusted {
			return "The attestation is signed, over exactly this receipt and result, by the receipt's key, and that key is the trusted key given."
		}
		return "The attestation is signed, over exactly this receipt and result, by the key the receipt names."
	case "sources_unchanged":
		return "The four source files in the workspace today are byte for byte the ones the run was made from."
	case "engine_unchanged":
		return "The program running this check is byte for byte the one that made the run."
	case "result_recomputed":
		return "Computing again from the same sources gives the saved result byte for byte."
	case app.LedgerCheckName:
		return "Every line of the call ledger is a well-formed record, numbered from 1 without a gap, each chained to the line before by its SHA256."
	}
	return name
}

// evidenceSection is section 5: what binds the run, and how to check it again.
func evidenceSection(r app.Review, running map[string]string) section {
	s := section{Heading: "The evidence"}
	t := &table{Head: []string{"Item", "Value"}}
	row := func(item string, value span) { t.Rows = append(t.Rows, []span{txt(item), value}) }
	row("Run ID", code(r.RunID))
	rc := r.Receipt
	if rc == nil {
		s.Blocks = append(s.Blocks, para(txt("The run's own evidence is not shown: it did not verify, so what its files say cannot be relied on.")))
	} else {
		row("Created at", code(rc.CreatedAt))
		row("Definition", code(rc.DefinitionID))
		row("Source digest", code(rc.SourceDigest))
		for _, name := range domain.SourceNames() {
			row("SHA256 of "+name, code(rc.Sources[name]))
		}
		row("Engine SHA256", code(rc.EngineSHA256))
		row("Go version", optional(rc.Build.GoVersion))
		row("Module version", optional(rc.Build.ModuleVersion))
		row("VCS revision", optional(rc.Build.VCSRevision))
		modified := txt("not recorded")
		if m := rc.Build.VCSModified; m != nil {
			modified = txt(map[bool]string{true: "yes: built from a checkout with uncommitted changes", false: "no"}[*m])
		}
		row("VCS modified", modified)
		signer := txt("not signed")
		if rc.Signer != nil {
			signer = code(rc.Signer.KeyID)
		}
		row("Signer's key ID", signer)
		row("Trusted key", txt(trustedKey(rc.Signer != nil, r.TrustedKey)))
	}
	if r.Ledger != nil {
		row("Ledger record", txt(ledgerRecord(r)))
	}
	var blockers []rebuild.Blocker
	if rc != nil && r.Verified() {
		blockers = rebuild.Check(running)
		if len(blockers) == 0 {
			row("Rebuildable", txt("yes: nothing in its build rules out rebuilding it from its revision (the rebuild below is the proof)"))
		} else {
			row("Rebuildable", span{Text: "no: the engine that made this run cannot be rebuilt from its receipt", Strong: true})
		}
	}
	s.Blocks = append(s.Blocks, block{Table: t})
	if rc != nil {
		s.Blocks = append(s.Blocks, rebuildRecipe(rc.Build, blockers))
	}
	return s
}

// trustedKey says what --trusted-key showed of a verified run.
func trustedKey(signed, trusted bool) string {
	switch {
	case trusted:
		return "given, and the run is signed by it"
	case signed:
		return "not given: the signature shows the run is unchanged since it was signed, but not who signed it (a forger can strip it); check again with --trusted-key"
	}
	return "not given"
}

// ledgerRecord says which record of the ledger made the run.
func ledgerRecord(r app.Review) string {
	l := r.Ledger
	var s string
	if rec := l.Record; rec != nil {
		s = fmt.Sprintf("line %d, seq %d: the analyze that made this run, recorded at %s over %s", rec.Line, rec.Seq, rec.Time, rec.Transport)
	} else if o := l.Other; o != nil {
		// A record names the ID, of another result: the run was made again
		// under the same ID, which "no record names it" would hide.
		s = fmt.Sprintf("not recorded: line %d, seq %d records an analyze of this run ID with another result (SHA256 %s), so the run here is not the one that call committed; find out who made this one before relying on it", o.Line, o.Seq, o.ResultSHA256)
	} else {
		s = fmt.Sprintf("not recorded: none of the ledger's %s names this run", count(int(l.Records), "record", "records"))
	}
	if !l.Verified && r.Fault != nil && r.Fault.Code != protocol.LedgerTampered {
		s += fmt.Sprintf("; the ledger's chain is damaged as well, at line %d", l.BadLine)
	}
	return s
}

// rebuildRecipe is the recipe to rebuild the engine, in one sentence, or
// why it cannot be rebuilt: the blockers of the engine's build settings
// (none for a run that did not verify, whose engine is not this one),
// then what the receipt itself shows.
func rebuildRecipe(b evidence.Build, blockers []rebuild.Blocker) block {
	if len(blockers) > 0 {
		spans := []span{txt("This engine cannot be rebuilt from the receipt, so the run can be checked only with the engine itself:")}
		for _, bl := range blockers {
			spans = append(spans, txt(" "+bl.Why()))
		}
		return para(spans...)
	}
	goVersion := "the same Go version"
	if b.GoVersion != nil {
		goVersion = *b.GoVersion
	}
	spans := []span{}
	if b.VCSRevision != nil {
		spans = append(spans, txt("To rebuild the engine: check out revision "), code(*b.VCSRevision), txt(", build it with "+goVersion+" and "))
	} else {
		spans = append(spans, txt("This build recorded no revision, so it can be rebuilt only from the very source it was made from: build that with "+goVersion+" and "))
	}
	spans = append(spans, code(BuildCommand), txt(", then compare the SHA256 of bin/tool-runner with the engine SHA256 above; "),
		code(RebuildScript), txt(" does all of it and verifies the run with the rebuilt engine."))
	if b.VCSModified != nil && *b.VCSModified {
		spans = append(spans, txt(" The checkout had uncommitted changes, so a build of the revision alone will not match."))
	}
	return para(spans...)
}

// unproven is section 6: the verification block, in words.
func unproven(r app.Review) section {
	t := &table{Head: []string{"Statement", "Value", "What it means"}}
	for _, d := range r.Disclaimer {
		t.Rows = append(t.Rows, []span{code(d.Field), code(d.Value), txt(disclaimed(d))})
	}
	return section{Heading: "What this does not prove", Blocks: []block{
		para(txt("Every answer of this program carries these five statements. Each names something it did not do or test:")),
		{Table: t},
	}}
}

// disclaimed says one statement of the verification block in a sentence
// a non-engineer understands.
func disclaimed(d app.Disclaimed) string {
	switch d {
	case app.Disclaimed{Field: "native_bi", Value: "not_run"}:
		return "The numbers were not reproduced in any business-intelligence or reporting tool of your own; only this program computed them."
	case app.Disclaimed{Field: "host_cancellation", Value: "not_tested"}:
		return "Whether the AI agent's host can stop a call part-way was not tested; only this program's own cancel file and signals were."
	case app.Disclaimed{Field: "os_sandbox", Value: "not_claimed"}:
		return "The program does not claim to have run in an operating-system sandbox. On Linux it asks the kernel to stop it from touching anything but the files it needs, where the kernel can, but this evidence does not record whether it did: that it read only its four sources and wrote only its output rests on its own checks."
	case app.Disclaimed{Field: "real_model_quality", Value: "not_tested"}:
		return "Nothing here judges the AI agent or model that asked for this run: how well it chose the run or explains the result was not tested."
	case app.Disclaimed{Field: "human_review", Value: "not_performed"}:
		return "No person has reviewed this run yet. That is what this page is for: release needs your decision, which the program never makes."
	}
	return d.Field + " is " + d.Value + "."
}

// subjects lists the first 20 subjects and counts the rest.
func subjects(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	shown := ids[:min(len(ids), maxSubjects)]
	s := strings.Join(shown, ", ")
	if rest := len(ids) - len(shown); rest > 0 {
		s += fmt.Sprintf(", and %d more", rest)
	}
	return s
}

// count writes n with the singular or plural noun.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// words writes a snake_case value as words: fictional currency units.
func words(s string) string { return strings.ReplaceAll(s, "_", " ") }

// optional is a build fact, or "not recorded" when the build did not
// record it.
func optional(s *string) span {
	if s == nil {
		return txt("not recorded")
	}
	return code(*s)
}

// grouped writes a money string (an exact plain decimal, protocol §5) with
// its integer digits grouped by thousands, "9,007,855.54", for reading:
// on the page only, result.json keeps the exact string. Anything that is
// not such a string is written as it is.
func grouped(s string) string {
	sign, rest := "", s
	if strings.HasPrefix(rest, "-") {
		sign, rest = "-", rest[1:]
	}
	whole, frac, point := strings.Cut(rest, ".")
	if whole == "" || strings.Trim(whole, "0123456789") != "" || strings.Trim(frac, "0123456789") != "" {
		return s
	}
	var b strings.Builder
	b.WriteString(sign)
	for i, d := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	if point {
		b.WriteString("." + frac)
	}
	return b.String()
}

// groupedInt writes a count grouped by thousands.
func groupedInt(n int64) string { return grouped(strconv.FormatInt(n, 10)) }
