// Package sqlitebindings is a [remote.BindingStore] in a SQLite file
// (modernc.org/sqlite, no cgo): the binding records of a caller's remote
// calls survive its restart, so it can resume or cancel the remote tasks
// it started ([remote.Node.Resume], [remote.Node.CancelBound]).
//
//	store, err := sqlitebindings.Open(filepath.Join(stateDir, "bindings.db"), nil)
//	...
//	node := &remote.Node{Name: "summarise", Transport: tr, Skill: "summarise",
//		AgentURL: url, Bindings: store}
//
// Several processes may open the same file (WAL journal, busy timeout);
// each write is durable when it returns (synchronous FULL).
package sqlitebindings
