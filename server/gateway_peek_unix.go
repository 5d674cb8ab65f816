//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package server

import "syscall"

// canPeek says whether h1Conn.peek can look at a socket without reading
// it. Elsewhere the gateway's requests all go through http.Transport.
const canPeek = true

// peek looks at the idle connection's socket without blocking or
// consuming anything (syscall.RawConn.Read's function) and records in
// peekOpen whether it is open with nothing to read.
func (pc *h1Conn) peek(fd uintptr) bool {
	var b [1]byte
	_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	pc.peekOpen = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
	return true
}
