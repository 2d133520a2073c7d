// Command freeport prints n free TCP ports on 127.0.0.1, one a line (default
// 1), for run.sh to give the Restate server and the service their own ports.
// All n listeners are held open until every port is chosen so the ports are
// distinct; a port may still be taken by someone else before it is used.
package main
