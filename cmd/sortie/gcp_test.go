package main

import "testing"

// The Cloud Run flags refuse what cannot work, naming the flag, before
// anything is opened (exit 2).
func TestGCPFlagsUsage(t *testing.T) {
	c := newCLI(t)
	job := []string{"--cloudrun-job", "projects/p/locations/r/jobs/j"}
	cases := []usageCase{
		{append(job, "--cloudrun-service", "https://w.run.app", "list"), []string{"--cloudrun-service", "not both"}},
		{[]string{"--cloudrun-service", "w.run.app", "list"}, []string{"--cloudrun-service", "https URL"}},
		{[]string{"--gcp-kms-keys", "no-equals", "list"}, []string{"--gcp-kms-keys", "no-equals"}},
		{append(job, "--in-process", "run", "probe"), []string{"--in-process", "Cloud Run"}},
		{append(job, "--dynamodb-table", "runs", "--lambda-function", "f", "list"), []string{"--cloudrun-job", "not both"}},
		{append(job, "serve", "--listen", "127.0.0.1:0", "--worker-callbacks", "--public-url", "http://127.0.0.1:7780"),
			[]string{"--public-url", "Cloud Run cannot reach it"}},
		{[]string{"serve", "--listen", "127.0.0.1:0", "--worker-callbacks", "--public-url", "http://sortie.internal:7780"},
			[]string{"--public-url", "plain HTTP off loopback", "--insecure-http-callbacks"}},
	}
	wantUsage(t, c, cases)
}
