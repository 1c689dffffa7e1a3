package main

import "strings"

// The states of parseEnvFile.
const (
	stPreKey = iota
	stKey
	stPreValue
	stValue
	stValueEsc
	stSingle
	stDouble
	stDoubleEsc
	stComment
	stCommentEsc
)

// parseEnvFile reads an environment file as systemd's EnvironmentFile=
// does and returns its KEY=VALUE assignments in order. A line is KEY=VALUE;
// blank lines, lines without '=' and lines starting with '#' or ';' are
// skipped. Blanks around the key and the value are dropped, blanks inside
// an unquoted value kept; a value may be (or contain) a 'single' or
// "double" quoted part, which can span lines; outside single quotes a
// backslash keeps the next character (inside double quotes only before
// " \ ` $, and before a newline it joins the lines).
func parseEnvFile(s string) []string {
	p := &envParser{}
	for i := 0; i < len(s); i++ {
		p.step(s[i])
	}
	switch p.state {
	case stPreValue, stValue, stValueEsc, stSingle, stDouble, stDoubleEsc:
		p.emit()
	}
	return p.out
}

type envParser struct {
	state    int
	key, val strings.Builder
	keep     int // val's length up to its last character that is not a trailing blank
	out      []string
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }

func (p *envParser) emit() {
	key := strings.TrimRight(p.key.String(), " \t\r")
	p.out = append(p.out, key+"="+p.val.String()[:p.keep])
	p.key.Reset()
	p.val.Reset()
	p.keep = 0
	p.state = stPreKey
}

// add appends c to the value; a blank is kept only if more follows.
func (p *envParser) add(c byte, quoted bool) {
	p.val.WriteByte(c)
	if quoted || !isBlank(c) {
		p.keep = p.val.Len()
	}
}

func (p *envParser) step(c byte) {
	switch p.state {
	case stPreKey:
		switch {
		case c == '#' || c == ';':
			p.state = stComment
		case !isBlank(c) && c != '\n':
			p.key.WriteByte(c)
			p.state = stKey
		}
	case stKey:
		switch c {
		case '=':
			p.state = stPreValue
		case '\n': // no '=': not an assignment
			p.key.Reset()
			p.state = stPreKey
		default:
			p.key.WriteByte(c)
		}
	case stPreValue:
		p.stepPreValue(c)
	case stValue:
		switch c {
		case '\n':
			p.emit()
		case '\\':
			p.state = stValueEsc
		default:
			p.add(c, false)
		}
	case stValueEsc:
		if c != '\n' { // a backslash at the end of a line joins the next
			p.add(c, true)
		}
		p.state = stValue
	default:
		p.stepQuotedOrComment(c)
	}
}

// stepPreValue: blanks before the value (or between its quoted parts).
func (p *envParser) stepPreValue(c byte) {
	switch {
	case c == '\n':
		p.emit()
	case isBlank(c):
	case c == '\'':
		p.state = stSingle
	case c == '"':
		p.state = stDouble
	case c == '\\':
		p.state = stValueEsc
	default:
		p.add(c, false)
		p.state = stValue
	}
}

func (p *envParser) stepQuotedOrComment(c byte) {
	switch p.state {
	case stSingle:
		if c == '\'' {
			p.state = stPreValue
			return
		}
		p.add(c, true)
	case stDouble:
		switch c {
		case '"':
			p.state = stPreValue
		case '\\':
			p.state = stDoubleEsc
		default:
			p.add(c, true)
		}
	case stDoubleEsc:
		switch {
		case strings.IndexByte("\"\\`$", c) >= 0:
			p.add(c, true)
		case c != '\n':
			p.add('\\', true)
			p.add(c, true)
		}
		p.state = stDouble
	case stComment:
		switch c {
		case '\n':
			p.state = stPreKey
		case '\\':
			p.state = stCommentEsc
		}
	case stCommentEsc:
		p.state = stComment
	}
}

// expandArgv substitutes env's variables in the arguments of argv (not in
// the command) as systemd does in ExecStart=: a word that is exactly
// $NAME becomes the variable's value split at blanks (quotes in it
// honoured), so zero or more words; ${NAME} anywhere in a word becomes the
// value as it is, inside that one word; $$ is a literal $. An unset
// variable is empty. $NAME inside a longer word is left as it is.
func expandArgv(argv, env []string) []string {
	out := []string{argv[0]}
	for _, w := range argv[1:] {
		if len(w) > 1 && w[0] == '$' && w[1] != '{' && w[1] != '$' {
			v, _ := lookupEnv(env, w[1:])
			words, err := splitWords(v)
			if err != nil {
				words = strings.Fields(v)
			}
			out = append(out, words...)
			continue
		}
		out = append(out, expandWord(w, env))
	}
	return out
}

// expandWord substitutes ${NAME}, ${NAME:-DEFAULT}, ${NAME:+ALTERNATIVE}
// and $$ in w.
func expandWord(w string, env []string) string {
	var b strings.Builder
	for i := 0; i < len(w); i++ {
		if w[i] != '$' || i+1 >= len(w) {
			b.WriteByte(w[i])
			continue
		}
		switch end := strings.IndexByte(w[i:], '}'); {
		case w[i+1] == '$':
			b.WriteByte('$')
			i++
		case w[i+1] == '{' && end > 0:
			b.WriteString(substitute(w[i+2:i+end], env))
			i += end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// substitute is the value of the expression between ${ and }.
func substitute(expr string, env []string) string {
	name, word, op := expr, "", ""
	if i := strings.Index(expr, ":"); i >= 0 && i+1 < len(expr) && (expr[i+1] == '-' || expr[i+1] == '+') {
		name, op, word = expr[:i], expr[i:i+2], expr[i+2:]
	}
	v, _ := lookupEnv(env, name)
	switch {
	case op == ":-" && v == "":
		return word
	case op == ":+" && v != "":
		return word
	case op == ":+":
		return ""
	}
	return v
}
