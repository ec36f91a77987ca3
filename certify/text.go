package certify

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text a sink sends back is untrusted: it reaches a terminal, JSON, JUnit
// XML and a Markdown certificate. quote bounds and escapes it where it is
// inserted; scrub is the last pass over everything a result carries.

// quote truncates sink text to n bytes (on a rune boundary) and renders it
// as an escaped, double-quoted string with no control characters, no
// non-ASCII and no backticks (which could close a Markdown code fence).
func quote(s string, n int) string {
	s = strings.TrimSpace(s)
	extra := ""
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		extra = fmt.Sprintf("…(%d bytes)", len(s))
		s = s[:cut]
	}
	return strings.ReplaceAll(strconv.QuoteToASCII(s), "`", `\x60`) + extra
}

// body is the usual rendering of a reply body in a message.
func body(b []byte) string { return quote(string(b), 200) }

// maxLine bounds any one message or transcript line.
const maxLine = 2000

// scrub escapes what must never reach an output verbatim: control
// characters other than newline, invisible or bidi-changing runes, and
// backticks; and it bounds the length.
func scrub(s string) string {
	if len(s) > maxLine {
		s = quote(s, maxLine) // already escaped
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteRune(r)
		case r == '`':
			b.WriteString(`\x60`)
		case r == utf8.RuneError, r < 0x20, r == 0x7f, !unicode.IsPrint(r):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// scrubResult applies scrub to every text field of a result.
func scrubResult(r Result) Result {
	r.Message = scrub(r.Message)
	ex := make([]Exchange, len(r.Exchanges))
	for i, e := range r.Exchanges {
		ex[i] = Exchange{Request: scrub(e.Request), Status: e.Status, Response: scrub(e.Response), Error: scrub(e.Error), Want: scrub(e.Want)}
	}
	r.Exchanges = ex
	return r
}
