package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// hashLen is how many hex digits of the SHA-256 are recorded: 64 bits are
// plenty to notice a change, and keep the list file readable.
const hashLen = 16

// errNotFound is returned when a file does not declare a symbol.
var errNotFound = errors.New("not declared")

// Symbols name top-level declarations of one Go file:
//
//	Name        a function, or the spec of a type, const or var declaration
//	Recv.Name   a method of the named receiver type (pointer or not)
//	group:Name  the whole const, var or type declaration that declares Name,
//	            all of a parenthesised group: a name added to the group
//	            changes its hash
//
// Top-level names are unique within a package (methods are qualified by
// their receiver), so no kind prefix is needed.

// hashSymbol returns the hash of symbol's declaration in the Go source src
// (read from filename, for positions in errors).
//
// The hash covers the declaration's tokens as go/scanner reads them from
// the source, comments dropped, each token once with its literal and the
// automatic semicolons that line ends insert: a change of layout (gofmt,
// blank lines, line breaks inside an expression) or of a comment, doc
// comment included, keeps the hash; any change to a signature, body, type
// or value, identifiers and string literals included, changes it.
func hashSymbol(filename string, src []byte, symbol string) (string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filename, src, parser.SkipObjectResolution)
	if err != nil {
		return "", err
	}
	node := findDecl(f, symbol)
	if node == nil {
		return "", fmt.Errorf("%s: %s: %w", filename, symbol, errNotFound)
	}
	tf := fset.File(node.Pos())
	start, end := tf.Offset(node.Pos()), tf.Offset(node.End())
	canon, err := canonical(src[start:end])
	if err != nil {
		return "", fmt.Errorf("%s: %s: %w", filename, symbol, err)
	}
	sum := sha256.Sum256([]byte(canon))
	return hex.EncodeToString(sum[:])[:hashLen], nil
}

// hashFile is hashSymbol on a file on disk.
func hashFile(path, symbol string) (string, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return hashSymbol(path, src, symbol)
}

// findDecl returns the node that declares symbol in f: a *ast.FuncDecl
// (from the func keyword, without its doc comment), the *ast.TypeSpec or
// *ast.ValueSpec of a type, const or var, or for "group:" the *ast.GenDecl
// around it.
func findDecl(f *ast.File, symbol string) ast.Node {
	if name, ok := strings.CutPrefix(symbol, "group:"); ok {
		if spec := findDecl(f, name); spec != nil {
			for _, d := range f.Decls {
				if g, ok := d.(*ast.GenDecl); ok && g.Pos() <= spec.Pos() && spec.End() <= g.End() {
					return g
				}
			}
		}
		return nil
	}
	recv, name, isMethod := strings.Cut(symbol, ".")
	if !isMethod {
		name, recv = recv, ""
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.Name == name && receiverName(d) == recv {
				return d
			}
		case *ast.GenDecl:
			if isMethod {
				continue
			}
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.Name == name {
						return s
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.Name == name {
							return s
						}
					}
				}
			}
		}
	}
	return nil
}

// receiverName returns the base type name of a method's receiver ("T" for
// T, *T, T[K] and *T[K]), or "" for a function.
func receiverName(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return ""
	}
	t := d.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.ParenExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// canonical returns src's tokens, comments dropped, one per line. A
// semicolon is ";" whether written or inserted at a line end; a semicolon
// before a closing ")" or "}" and a comma before a closing ")", "}" or "]"
// are dropped, as Go lets them be left out: `{ return x }` and a body of
// its own lines, or a call on one line and one spread over several lines
// (which needs a trailing comma), are the same.
func canonical(src []byte) (string, error) {
	fset := token.NewFileSet()
	file := fset.AddFile("", -1, len(src))
	var errs scanner.ErrorList
	var s scanner.Scanner
	s.Init(file, src, func(pos token.Position, msg string) { errs.Add(pos, msg) }, 0)
	type tok struct {
		tok token.Token
		lit string
	}
	var toks []tok
	for {
		_, t, lit := s.Scan()
		if t == token.EOF {
			break
		}
		closing := t == token.RPAREN || t == token.RBRACE || t == token.RBRACK
		for len(toks) > 0 && closing {
			last := toks[len(toks)-1].tok
			if last == token.COMMA || (last == token.SEMICOLON && t != token.RBRACK) {
				toks = toks[:len(toks)-1]
				continue
			}
			break
		}
		toks = append(toks, tok{t, lit})
	}
	if errs.Len() > 0 {
		return "", errs.Err()
	}
	var b strings.Builder
	for _, t := range toks {
		switch {
		case t.tok == token.SEMICOLON:
			b.WriteString(";")
		case t.lit != "":
			b.WriteString(t.tok.String())
			b.WriteString(" ")
			b.WriteString(t.lit)
		default:
			b.WriteString(t.tok.String())
		}
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// findInPackage looks for symbol in the other non-test Go files of dir
// (the package of a file that no longer declares it) and returns the base
// names of the files that declare it.
func findInPackage(dir, skip, symbol string) []string {
	matches, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	var found []string
	for _, m := range matches {
		if strings.HasSuffix(m, "_test.go") || filepath.Base(m) == skip {
			continue
		}
		if _, err := hashFile(m, symbol); err == nil {
			found = append(found, filepath.Base(m))
		}
	}
	sort.Strings(found)
	return found
}
