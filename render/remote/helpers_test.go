package remote

import (
	"io"
	"net"
	"net/url"
)

type netTCPAddr = net.TCPAddr

type ioWriter = io.Writer

func parseURL(s string) (*url.URL, error) { return url.Parse(s) }
