package transport

import "strings"

// sfItem is an item of a Structured Field List (RFC 8941) as the IETF
// RateLimit fields use it: a String or Token naming a policy, with
// parameters. Only the parameters' Integer values are kept (the fields'
// numbers are all Integers); a parameter of another type has ok false.
type sfItem struct {
	name   string
	params []sfParam
}

type sfParam struct {
	key string
	val int64
	ok  bool // val is an Integer
}

// param returns the Integer parameter key of it, and whether it has one.
func (it sfItem) param(key string) (int64, bool) {
	for _, p := range it.params {
		if p.key == key {
			return p.val, p.ok
		}
	}
	return 0, false
}

// maxSFMembers bounds the members of a list we parse: the fields carry a
// few policies, not thousands.
const maxSFMembers = 64

// parseSFList parses the field lines of a Structured Field List whose
// members are Items with a String or Token value. Following RFC 8941, a
// field that does not parse is ignored as a whole: it returns false. Inner
// lists and other bare item types fail the parse too (the RateLimit
// fields never use them).
func parseSFList(lines []string) ([]sfItem, bool) {
	// Field lines combine as HTTP combines them: joined with commas (so an
	// empty line among others makes the field invalid, as RFC 8941 wants).
	p := sfParser{s: strings.Join(lines, ",")}
	p.skipSP()
	if p.s == "" {
		return nil, true
	}
	var items []sfItem
	for {
		if len(items) == maxSFMembers {
			return nil, false
		}
		it, ok := p.item()
		if !ok {
			return nil, false
		}
		items = append(items, it)
		p.skipOWS()
		if p.s == "" {
			return items, true
		}
		if p.s[0] != ',' {
			return nil, false
		}
		p.s = p.s[1:]
		p.skipOWS()
		if p.s == "" {
			return nil, false // trailing comma
		}
	}
}

type sfParser struct{ s string }

func (p *sfParser) skipSP() {
	p.s = strings.TrimLeft(p.s, " ")
}

func (p *sfParser) skipOWS() {
	p.s = strings.TrimLeft(p.s, " \t")
}

// item parses a String or Token and its parameters.
func (p *sfParser) item() (sfItem, bool) {
	var (
		it sfItem
		ok bool
	)
	switch {
	case p.s == "":
		return it, false
	case p.s[0] == '"':
		it.name, ok = p.str()
	case isAlpha(p.s[0]) || p.s[0] == '*':
		it.name, ok = p.token()
	default:
		return it, false
	}
	if !ok {
		return it, false
	}
	for len(p.s) > 0 && p.s[0] == ';' {
		p.s = p.s[1:]
		p.skipSP()
		key, ok := p.key()
		if !ok || len(it.params) == maxSFMembers {
			return it, false
		}
		prm := sfParam{key: key}
		if len(p.s) > 0 && p.s[0] == '=' {
			p.s = p.s[1:]
			if prm.val, prm.ok, ok = p.bareValue(); !ok {
				return it, false
			}
		}
		// A repeated key: the last value wins (RFC 8941, 4.2.3.2).
		replaced := false
		for i := range it.params {
			if it.params[i].key == key {
				it.params[i], replaced = prm, true
			}
		}
		if !replaced {
			it.params = append(it.params, prm)
		}
	}
	return it, true
}

// bareValue parses a parameter's value: an Integer (returned), or a
// Decimal, String, Token, Byte Sequence or Boolean (checked, not kept).
func (p *sfParser) bareValue() (val int64, isInt, ok bool) {
	if p.s == "" {
		return 0, false, false
	}
	switch c := p.s[0]; {
	case c == '-' || isDigit(c):
		return p.number()
	case c == '"':
		_, ok = p.str()
	case isAlpha(c) || c == '*':
		_, ok = p.token()
	case c == ':':
		ok = p.bytes()
	case c == '?':
		ok = len(p.s) >= 2 && (p.s[1] == '0' || p.s[1] == '1')
		if ok {
			p.s = p.s[2:]
		}
	}
	return 0, false, ok
}

// number parses an Integer (at most 15 digits) or a Decimal.
func (p *sfParser) number() (val int64, isInt, ok bool) {
	neg := false
	if p.s[0] == '-' {
		neg = true
		p.s = p.s[1:]
	}
	i := 0
	for i < len(p.s) && isDigit(p.s[i]) {
		i++
	}
	if i == 0 || i > 15 {
		return 0, false, false
	}
	for _, c := range []byte(p.s[:i]) {
		val = val*10 + int64(c-'0')
	}
	if neg {
		val = -val
	}
	if i < len(p.s) && p.s[i] == '.' {
		// A Decimal: at most 12 integer and 3 fraction digits.
		j := i + 1
		for j < len(p.s) && isDigit(p.s[j]) {
			j++
		}
		if i > 12 || j == i+1 || j-i-1 > 3 {
			return 0, false, false
		}
		p.s = p.s[j:]
		return 0, false, true
	}
	p.s = p.s[i:]
	return val, true, true
}

// str parses a String: printable ASCII in quotes, \" and \\ escaped.
func (p *sfParser) str() (string, bool) {
	var b strings.Builder
	for i := 1; i < len(p.s); i++ {
		c := p.s[i]
		switch {
		case c == '\\':
			i++
			if i == len(p.s) || (p.s[i] != '"' && p.s[i] != '\\') {
				return "", false
			}
			b.WriteByte(p.s[i])
		case c == '"':
			p.s = p.s[i+1:]
			return b.String(), true
		case c < 0x20 || c > 0x7e:
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return "", false
}

// token parses a Token.
func (p *sfParser) token() (string, bool) {
	i := 1
	for i < len(p.s) && isTokenChar(p.s[i]) {
		i++
	}
	t := p.s[:i]
	p.s = p.s[i:]
	return t, true
}

// key parses a parameter key.
func (p *sfParser) key() (string, bool) {
	if p.s == "" || !(isLower(p.s[0]) || p.s[0] == '*') {
		return "", false
	}
	i := 1
	for i < len(p.s) && (isLower(p.s[i]) || isDigit(p.s[i]) || strings.IndexByte("_-.*", p.s[i]) >= 0) {
		i++
	}
	k := p.s[:i]
	p.s = p.s[i:]
	return k, true
}

// bytes parses a Byte Sequence, :base64:.
func (p *sfParser) bytes() bool {
	for i := 1; i < len(p.s); i++ {
		c := p.s[i]
		switch {
		case c == ':':
			p.s = p.s[i+1:]
			return true
		case isAlpha(c) || isDigit(c) || c == '+' || c == '/' || c == '=':
		default:
			return false
		}
	}
	return false
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isAlpha(c byte) bool { return isLower(c) || 'A' <= c && c <= 'Z' }

// isTokenChar reports whether c may follow a Token's first character:
// tchar (RFC 9110), ":" or "/".
func isTokenChar(c byte) bool {
	return isAlpha(c) || isDigit(c) || strings.IndexByte("!#$%&'*+-.^_`|~:/", c) >= 0
}
