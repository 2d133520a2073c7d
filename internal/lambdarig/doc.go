// Package rig starts the real parts the launchers/lambda tests run: the
// AWS Lambda Runtime Interface Emulator (pinned by tools/lambdarie/go.mod)
// with the worker's bootstrap built from cmd/sortie-lambda ([Build],
// [StartRIE]), and local-kms (pinned by tools/localkms/go.mod,
// [StartKMS]). Every process binds 127.0.0.1 on a free port and gets an
// explicit environment; Stop ends it and its children.
package rig
