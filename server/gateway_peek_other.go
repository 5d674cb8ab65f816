//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package server

// canPeek says whether h1Conn.peek can look at a socket without reading
// it. Here it cannot, and the gateway's requests all go through
// http.Transport.
const canPeek = false

func (pc *h1Conn) peek(uintptr) bool { return true }
