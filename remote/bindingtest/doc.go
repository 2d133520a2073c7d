// Package bindingtest is the conformance suite of [remote.BindingStore]:
// every store runs [Run] with a constructor of empty stores, so the memory
// store, the SQLite store (remote/sqlitebindings) and any other keep the
// same contract.
package bindingtest
