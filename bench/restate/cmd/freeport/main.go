package main

import (
	"flag"
	"fmt"
	"net"
	"os"
)

func main() {
	n := flag.Int("n", 1, "number of ports to print (1..16)")
	flag.Parse()
	if *n < 1 || *n > 16 {
		fmt.Fprintf(os.Stderr, "freeport: -n %d out of range 1..16\n", *n)
		os.Exit(2)
	}
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for range *n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, "freeport:", err)
			os.Exit(1)
		}
		held = append(held, l)
		fmt.Println(l.Addr().(*net.TCPAddr).Port)
	}
}
