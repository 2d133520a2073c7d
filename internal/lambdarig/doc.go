// Package lambdarig starts the real parts the Lambda tests run (those of
// launchers/lambda and of cmd/sortie's AWS host): the AWS Lambda Runtime
// Interface Emulator (pinned by tools/lambdarie/go.mod) with the worker's
// bootstrap built from cmd/sortie-lambda ([Build], [StartRIE]), and the
// local-kms binary (pinned by tools/localkms/go.mod; testrig/localkms
// starts it). Every process binds 127.0.0.1 on a free port and gets an
// explicit environment; [RIE.Stop] ends it and its children.
package lambdarig
