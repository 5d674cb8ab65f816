// Package lua holds admit's Redis decision script.
package lua
