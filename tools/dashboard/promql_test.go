package dashboard

// A small PromQL parser, for the dashboard's tests only. The real parser
// (github.com/prometheus/prometheus/promql/parser) would pull Prometheus' whole module graph into
// go.mod for one test; this one covers the grammar the dashboard uses and reports what the
// metric-name test needs: every selector with its matchers and whether a counter function wraps
// it, and every label a grouping clause names. It is strict where Prometheus is (string escapes,
// durations, argument types), so a query it accepts is one Prometheus accepts too; the end-to-end
// test that runs every query against a real Prometheus is the final word.

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tNumber
	tString
	tDuration // the inside of [...]: 5m, 1m:10s
	tPunct    // ( ) { } , and operators
)

type token struct {
	kind tokKind
	text string // for tString: the unquoted value
	pos  int
}

var durationRE = regexp.MustCompile(`^([0-9]+(ms|s|m|h|d|w|y))+$`)

func lex(s string) ([]token, error) {
	var toks []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			i++
		case c == '"' || c == '\'':
			v, n, err := lexString(s[i:])
			if err != nil {
				return nil, fmt.Errorf("at %d: %w", i, err)
			}
			toks = append(toks, token{tString, v, i})
			i += n
		case c == '[':
			j := strings.IndexByte(s[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("at %d: unclosed [", i)
			}
			d := s[i+1 : i+j]
			rng, step, sub := strings.Cut(d, ":")
			if !durationRE.MatchString(rng) || (sub && step != "" && !durationRE.MatchString(step)) {
				return nil, fmt.Errorf("at %d: bad range %q", i, d)
			}
			toks = append(toks, token{tDuration, d, i})
			i += j + 1
		case isIdentStart(c):
			j := i
			for j < len(s) && (isIdentStart(s[j]) || (s[j] >= '0' && s[j] <= '9')) {
				j++
			}
			toks = append(toks, token{tIdent, s[i:j], i})
			i = j
		case c >= '0' && c <= '9' || c == '.':
			j := i
			for j < len(s) && (unicode.IsDigit(rune(s[j])) || s[j] == '.' || s[j] == 'e' ||
				((s[j] == '+' || s[j] == '-') && j > i && s[j-1] == 'e')) {
				j++
			}
			if _, err := strconv.ParseFloat(s[i:j], 64); err != nil {
				return nil, fmt.Errorf("at %d: bad number %q", i, s[i:j])
			}
			toks = append(toks, token{tNumber, s[i:j], i})
			i = j
		default:
			op := ""
			for _, o := range []string{"==", "!=", "<=", ">=", "=~", "!~", "(", ")", "{", "}", ",", "+", "-", "*", "/", "%", "^", "<", ">", "="} {
				if strings.HasPrefix(s[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				return nil, fmt.Errorf("at %d: unexpected %q", i, c)
			}
			toks = append(toks, token{tPunct, op, i})
			i += len(op)
		}
	}
	return append(toks, token{tEOF, "", len(s)}), nil
}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// lexString reads a PromQL string literal; escapes follow Go's rules, and an unknown escape such
// as "\." is an error in Prometheus too.
func lexString(s string) (string, int, error) {
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case q:
			lit := s[:i+1]
			if q == '\'' {
				lit = `"` + strings.ReplaceAll(strings.ReplaceAll(lit[1:i], `\'`, `'`), `"`, `\"`) + `"`
			}
			v, err := strconv.Unquote(lit)
			if err != nil {
				return "", 0, fmt.Errorf("bad string %s: %w", s[:i+1], err)
			}
			return v, i + 1, nil
		}
	}
	return "", 0, fmt.Errorf("unterminated string")
}

type valType int

const (
	vScalar valType = iota
	vInstant
	vRange
	vString
)

func (v valType) String() string {
	return [...]string{"scalar", "instant vector", "range vector", "string"}[v]
}

type matcher struct{ label, op, value string }

type selector struct {
	metric   string
	matchers []matcher
	ranged   bool
	counter  bool // the argument of rate, increase or irate
}

type parsedQuery struct {
	selectors []*selector
	grouping  []string // labels named in by, without, on, ignoring, group_left, group_right
}

var aggregations = map[string]bool{
	"sum": true, "avg": true, "min": true, "max": true, "count": true, "group": true,
	"stddev": true, "stdvar": true, "topk": true, "bottomk": true, "quantile": true, "count_values": true,
}

// aggregations that take a parameter before the vector.
var aggParam = map[string]valType{"topk": vScalar, "bottomk": vScalar, "quantile": vScalar, "count_values": vString}

// functions the dashboard may use: argument types and result.
var functions = map[string]struct {
	args   []valType
	result valType
}{
	"rate":          {[]valType{vRange}, vInstant},
	"increase":      {[]valType{vRange}, vInstant},
	"irate":         {[]valType{vRange}, vInstant},
	"deriv":         {[]valType{vRange}, vInstant},
	"changes":       {[]valType{vRange}, vInstant},
	"resets":        {[]valType{vRange}, vInstant},
	"clamp_min":     {[]valType{vInstant, vScalar}, vInstant},
	"clamp_max":     {[]valType{vInstant, vScalar}, vInstant},
	"abs":           {[]valType{vInstant}, vInstant},
	"vector":        {[]valType{vScalar}, vInstant},
	"scalar":        {[]valType{vInstant}, vScalar},
	"time":          {nil, vScalar},
	"max_over_time": {[]valType{vRange}, vInstant},
	"min_over_time": {[]valType{vRange}, vInstant},
	"avg_over_time": {[]valType{vRange}, vInstant},
	// label_replace(v, dst, replacement, src, regex)
	"label_replace": {[]valType{vInstant, vString, vString, vString, vString}, vInstant},
}

var counterFunctions = map[string]bool{"rate": true, "increase": true, "irate": true, "resets": true}

var binaryOps = map[string]bool{
	"+": true, "-": true, "*": true, "/": true, "%": true, "^": true,
	"==": true, "!=": true, "<": true, ">": true, "<=": true, ">=": true,
	"and": true, "or": true, "unless": true,
}

type parser struct {
	toks []token
	i    int
	out  parsedQuery
}

func parsePromQL(expr string) (*parsedQuery, valType, error) {
	toks, err := lex(expr)
	if err != nil {
		return nil, 0, err
	}
	p := &parser{toks: toks}
	t, err := p.expr()
	if err != nil {
		return nil, 0, err
	}
	if p.peek().kind != tEOF {
		return nil, 0, p.errf("unexpected %q after the expression", p.peek().text)
	}
	return &p.out, t, nil
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token { t := p.toks[p.i]; p.i++; return t }

func (p *parser) errf(format string, a ...any) error {
	return fmt.Errorf("at %d: %s", p.peek().pos, fmt.Sprintf(format, a...))
}

func (p *parser) accept(text string) bool {
	if t := p.peek(); (t.kind == tPunct || t.kind == tIdent) && t.text == text {
		p.i++
		return true
	}
	return false
}

func (p *parser) expect(text string) error {
	if !p.accept(text) {
		return p.errf("want %q, got %q", text, p.peek().text)
	}
	return nil
}

// expr: unary (binop [bool] [on|ignoring (labels) [group_left|group_right [(labels)]]] unary)*
// Precedence does not change what is valid for the subset the dashboard uses, so operands are
// read left to right.
func (p *parser) expr() (valType, error) {
	left, err := p.unary()
	if err != nil {
		return 0, err
	}
	for {
		t := p.peek()
		if (t.kind != tPunct && t.kind != tIdent) || !binaryOps[t.text] {
			return left, nil
		}
		p.i++
		p.accept("bool")
		if p.accept("on") || p.accept("ignoring") {
			if err := p.labelList(); err != nil {
				return 0, err
			}
			if p.accept("group_left") || p.accept("group_right") {
				if p.peek().text == "(" {
					if err := p.labelList(); err != nil {
						return 0, err
					}
				}
			}
		}
		right, err := p.unary()
		if err != nil {
			return 0, err
		}
		if left == vRange || right == vRange || left == vString || right == vString {
			return 0, p.errf("operator %q on a %s and a %s", t.text, left, right)
		}
		if (t.text == "and" || t.text == "or" || t.text == "unless") && (left != vInstant || right != vInstant) {
			return 0, p.errf("set operator %q needs two instant vectors", t.text)
		}
		if left == vScalar && right == vScalar {
			left = vScalar
		} else {
			left = vInstant
		}
	}
}

func (p *parser) unary() (valType, error) {
	if p.accept("-") || p.accept("+") {
		return p.unary()
	}
	return p.primary()
}

func (p *parser) primary() (valType, error) {
	t := p.peek()
	switch t.kind {
	case tNumber:
		p.i++
		return vScalar, nil
	case tString:
		p.i++
		return vString, nil
	case tPunct:
		switch t.text {
		case "(":
			p.i++
			v, err := p.expr()
			if err != nil {
				return 0, err
			}
			if err := p.expect(")"); err != nil {
				return 0, err
			}
			return p.rangeSuffix(v, nil)
		case "{":
			return p.selector("")
		}
		return 0, p.errf("unexpected %q", t.text)
	case tIdent:
		p.i++
		if aggregations[t.text] {
			return p.aggregation(t.text)
		}
		if p.peek().text == "(" {
			return p.call(t.text)
		}
		return p.selector(t.text)
	}
	return 0, p.errf("unexpected end of expression")
}

func (p *parser) aggregation(op string) (valType, error) {
	grouped := false
	if p.accept("by") || p.accept("without") {
		if err := p.labelList(); err != nil {
			return 0, err
		}
		grouped = true
	}
	if err := p.expect("("); err != nil {
		return 0, err
	}
	if want, ok := aggParam[op]; ok {
		v, err := p.expr()
		if err != nil {
			return 0, err
		}
		if v != want {
			return 0, p.errf("%s: parameter is a %s, want %s", op, v, want)
		}
		if err := p.expect(","); err != nil {
			return 0, err
		}
	}
	v, err := p.expr()
	if err != nil {
		return 0, err
	}
	if v != vInstant {
		return 0, p.errf("%s over a %s", op, v)
	}
	if err := p.expect(")"); err != nil {
		return 0, err
	}
	if !grouped && (p.accept("by") || p.accept("without")) {
		if err := p.labelList(); err != nil {
			return 0, err
		}
	}
	return vInstant, nil
}

func (p *parser) call(name string) (valType, error) {
	fn, ok := functions[name]
	if !ok {
		return 0, p.errf("unknown function %q (add it to the test's table if Prometheus has it)", name)
	}
	if err := p.expect("("); err != nil {
		return 0, err
	}
	for i := range fn.args {
		if i > 0 {
			if err := p.expect(","); err != nil {
				return 0, err
			}
		}
		start := len(p.out.selectors)
		v, err := p.expr()
		if err != nil {
			return 0, err
		}
		if v != fn.args[i] {
			return 0, p.errf("%s: argument %d is a %s, want %s", name, i+1, v, fn.args[i])
		}
		if counterFunctions[name] {
			for _, s := range p.out.selectors[start:] {
				s.counter = true
			}
		}
	}
	if err := p.expect(")"); err != nil {
		return 0, err
	}
	return fn.result, nil
}

func (p *parser) selector(metric string) (valType, error) {
	s := &selector{metric: metric}
	if p.accept("{") {
		for !p.accept("}") {
			if len(s.matchers) > 0 {
				if err := p.expect(","); err != nil {
					return 0, err
				}
				if p.accept("}") { // trailing comma
					break
				}
			}
			l := p.next()
			if l.kind != tIdent {
				return 0, p.errf("want a label name, got %q", l.text)
			}
			op := p.next()
			if op.kind != tPunct || (op.text != "=" && op.text != "!=" && op.text != "=~" && op.text != "!~") {
				return 0, p.errf("want a matcher operator, got %q", op.text)
			}
			v := p.next()
			if v.kind != tString {
				return 0, p.errf("want a string after %s%s, got %q", l.text, op.text, v.text)
			}
			if op.text == "=~" || op.text == "!~" {
				if _, err := regexp.Compile("^(?:" + v.text + ")$"); err != nil {
					return 0, p.errf("label %s: bad regex %q: %v", l.text, v.text, err)
				}
			}
			s.matchers = append(s.matchers, matcher{l.text, op.text, v.text})
		}
	}
	if metric == "" && len(s.matchers) == 0 {
		return 0, p.errf("empty selector")
	}
	p.out.selectors = append(p.out.selectors, s)
	return p.rangeSuffix(vInstant, s)
}

// rangeSuffix reads [range] or [range:step] after an instant vector.
func (p *parser) rangeSuffix(v valType, s *selector) (valType, error) {
	if p.peek().kind != tDuration {
		return v, nil
	}
	d := p.next().text
	if v != vInstant {
		return 0, p.errf("range [%s] after a %s", d, v)
	}
	if strings.Contains(d, ":") {
		return vRange, nil // subquery
	}
	if s == nil {
		return 0, p.errf("range [%s] after an expression needs a subquery step", d)
	}
	s.ranged = true
	return vRange, nil
}

func (p *parser) labelList() error {
	if err := p.expect("("); err != nil {
		return err
	}
	for i := 0; !p.accept(")"); i++ {
		if i > 0 {
			if err := p.expect(","); err != nil {
				return err
			}
			if p.accept(")") { // trailing comma
				break
			}
		}
		l := p.next()
		if l.kind != tIdent {
			return p.errf("want a label name, got %q", l.text)
		}
		p.out.grouping = append(p.out.grouping, l.text)
	}
	return nil
}
