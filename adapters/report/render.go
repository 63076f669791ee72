package report

import (
	"bufio"
	_ "embed"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/metricproof/metricproof/app"
)

// Markdown writes the page of r as CommonMark with GitHub's tables. Its
// first line is the verdict. running is the build settings of the engine
// running the report (newPage).
func Markdown(w io.Writer, r app.Review, running map[string]string) error {
	p := newPage(r, running)
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "# %s\n", inline(p.Verdict))
	if p.Remedy != nil {
		fmt.Fprintf(b, "\n%s\n", inline(p.Remedy))
	}
	for _, s := range p.Sections {
		fmt.Fprintf(b, "\n## %s\n", mdEscape(s.Heading))
		for _, bl := range s.Blocks {
			b.WriteString("\n")
			if bl.Table == nil {
				fmt.Fprintf(b, "%s\n", inline(bl.Para))
				continue
			}
			head := make([]span, len(bl.Table.Head))
			rule := make([]string, len(bl.Table.Head))
			for i, h := range bl.Table.Head {
				head[i], rule[i] = txt(h), "---"
			}
			fmt.Fprintf(b, "| %s |\n| %s |\n", cells(head), strings.Join(rule, " | "))
			for _, row := range bl.Table.Rows {
				fmt.Fprintf(b, "| %s |\n", cells(row))
			}
		}
	}
	return b.Flush()
}

// cells writes a table row's cells, each escaped.
func cells(row []span) string {
	out := make([]string, len(row))
	for i, c := range row {
		out[i] = inline([]span{c})
	}
	return strings.Join(out, " | ")
}

// inline writes spans as Markdown inline content. Values never begin a
// line: every line starts with the page's own text or markup, so no value
// can open a block (a heading, a list, a quote).
func inline(spans []span) string {
	var b strings.Builder
	for _, s := range spans {
		switch {
		case s.Code && safeInCode(s.Text):
			b.WriteString("`" + s.Text + "`")
		case s.Strong:
			b.WriteString("**" + mdEscape(s.Text) + "**")
		default:
			b.WriteString(mdEscape(s.Text))
		}
	}
	return b.String()
}

// safeInCode reports whether s can be a code span as it is: nothing in a
// code span is escaped, so a backtick would end it and a pipe end a table
// cell; anything else is shown literally. A value that is not safe is
// written as escaped text instead.
func safeInCode(s string) bool {
	return s != "" && !strings.ContainsAny(s, "`|") && visible(s) == s && strings.TrimSpace(s) == s
}

// mdPunctuation are the ASCII characters that start or end Markdown
// inline markup (emphasis, code, links and images, raw HTML and
// autolinks, entities, strikethrough, table cells, math, escapes).
// CommonMark lets a backslash escape any ASCII punctuation, so each is
// written after one. Parentheses are left as they are (with both brackets
// escaped no link can form), and so are + - . = (they open a block only
// at the start of a line, where no value stands), so the raw page stays
// readable: U+2028, 0.827272727273, demo-001.
const mdPunctuation = "\\`*_[]<>#!|~&$"

// mdEscape writes s as literal Markdown text. Besides mdPunctuation it
// escapes what GitHub's autolinks start from, so no value becomes a link:
// every "@" (an e-mail address), a ":" before "//" (a URL's scheme) and a
// "." after "www" (a www. name).
func mdEscape(s string) string {
	s = visible(s)
	var b strings.Builder
	for i, r := range s {
		switch {
		case r < utf8.RuneSelf && strings.ContainsRune(mdPunctuation, r),
			r == '@',
			r == ':' && strings.HasPrefix(s[i+1:], "//"),
			r == '.' && i >= 3 && strings.EqualFold(s[i-3:i], "www"):
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// visible replaces what could hide, break or rearrange text with its code
// point written out ("U+2028"): C0 and C1 controls (line breaks included),
// the line and paragraph separators, and every format character (Unicode's
// Cf: the bidirectional controls, U+061C included, the zero-width
// characters, the soft hyphen, the tag characters that can hide a whole
// text); invalid UTF-8 becomes U+FFFD.
func visible(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if !strings.ContainsFunc(s, hidden) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if hidden(r) {
			fmt.Fprintf(&b, "U+%04X", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// hidden reports a character visible writes as its code point.
func hidden(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7F && r <= 0x9F:
		return true
	case r >= 0x200B && r <= 0x200F, r >= 0x2028 && r <= 0x202E, r >= 0x2060 && r <= 0x2069, r == 0xFEFF:
		return true
	case r >= 0x00AD && unicode.Is(unicode.Cf, r):
		return true
	}
	return false
}

//go:embed page.html
var pageHead string

// htmlEscaper writes text as HTML character data: the replacements
// html/template makes in text and RCDATA (a NUL cannot occur: visible has
// written it out).
var htmlEscaper = strings.NewReplacer(
	"\x00", "\uFFFD", `"`, "&#34;", "&", "&amp;", "'", "&#39;", "+", "&#43;", "<", "&lt;", ">", "&gt;",
)

// HTML writes the page of r as one self-contained HTML5 document: inline
// CSS with a print style, no script, no external resource. Every value is
// escaped as text, by visible and then htmlEscaper; the only markup is the
// page's own. It is written by hand rather than by html/template, whose
// reflection on method names keeps every exported method of the binary
// alive in the linker: 2.5 MB more engine (9.0 → 11.5 MB stripped), which
// analyze and verify hash on every call (protocol §6).
func HTML(w io.Writer, r app.Review, running map[string]string) error {
	p := newPage(r, running)
	b := bufio.NewWriter(w)
	text := func(s string) { _, _ = htmlEscaper.WriteString(b, visible(s)) }
	spans := func(list []span) {
		for _, s := range list {
			switch {
			case s.Strong:
				b.WriteString("<strong>")
				text(s.Text)
				b.WriteString("</strong>")
			case s.Code:
				b.WriteString("<code>")
				text(s.Text)
				b.WriteString("</code>")
			default:
				text(s.Text)
			}
		}
	}
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>")
	text(p.Title)
	b.WriteString("</title>\n")
	b.WriteString(pageHead)
	// Green only for a run that verified and may be released; a verified
	// run with blockers is amber, never green; a fault is red.
	class := "fault"
	switch {
	case p.Verified && p.Eligible:
		class = "verified"
	case p.Verified:
		class = "blocked"
	}
	b.WriteString("<body>\n<h1 class=\"" + class + "\">")
	spans(p.Verdict)
	b.WriteString("</h1>")
	if p.Remedy != nil {
		b.WriteString("\n<p class=\"remedy\">")
		spans(p.Remedy)
		b.WriteString("</p>")
	}
	for _, sec := range p.Sections {
		b.WriteString("\n<section>\n<h2>")
		text(sec.Heading)
		b.WriteString("</h2>")
		for _, bl := range sec.Blocks {
			if bl.Table == nil {
				b.WriteString("\n<p>")
				spans(bl.Para)
				b.WriteString("</p>")
				continue
			}
			b.WriteString("\n<table>\n<thead><tr>")
			for _, h := range bl.Table.Head {
				b.WriteString("<th>")
				text(h)
				b.WriteString("</th>")
			}
			b.WriteString("</tr></thead>\n<tbody>")
			for _, row := range bl.Table.Rows {
				b.WriteString("\n<tr>")
				for _, c := range row {
					b.WriteString("<td>")
					spans([]span{c})
					b.WriteString("</td>")
				}
				b.WriteString("</tr>")
			}
			b.WriteString("\n</tbody>\n</table>")
		}
		b.WriteString("\n</section>")
	}
	b.WriteString("\n</body>\n</html>\n")
	return b.Flush()
}
