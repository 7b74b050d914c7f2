package check

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// familyDocs are the docs that docs/checks.md hands a whole family of
// checks to: their rules live there, and checks.md must link the doc.
var familyDocs = map[string]string{
	"perf":   "job.md",
	"verify": "verify.md",
}

// TestEveryCheckIsDocumented: every registered check ID has its rules in
// docs/checks.md, or, for a family checks.md hands over (perf.* to job.md,
// verify.* to verify.md), in that doc, which checks.md links. The ID must
// appear as code (`id`), as a heading or table cell names it; a check that
// ships without its documented rules and their sources fails here.
func TestEveryCheckIsDocumented(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile("../docs/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	checks := read("checks.md")
	for fam, doc := range familyDocs {
		if !regexp.MustCompile(`\]\(` + regexp.QuoteMeta(doc) + `[#)]`).MatchString(checks) {
			t.Errorf("docs/checks.md does not link %s, where the %s.* checks' rules are", doc, fam)
		}
	}
	docs := map[string]string{"checks.md": checks}
	for _, c := range All() {
		fam, _, _ := strings.Cut(c.ID, ".")
		name := "checks.md"
		if d, ok := familyDocs[fam]; ok {
			name = d
		}
		if _, ok := docs[name]; !ok {
			docs[name] = read(name)
		}
		if !strings.Contains(docs[name], "`"+c.ID+"`") && !regexp.MustCompile(`(?m)^#+ `+regexp.QuoteMeta(c.ID)+`\s*$`).MatchString(docs[name]) {
			t.Errorf("check %s is registered but docs/%s does not document it (no `%s` or heading)", c.ID, name, c.ID)
		}
	}
}
