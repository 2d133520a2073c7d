package host_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/dynamo"
	"github.com/sortie-run/sortie/host"
	"github.com/sortie-run/sortie/host/awshost"
	"github.com/sortie-run/sortie/internal/testwait"
	"github.com/sortie-run/sortie/testrig/dynamodblocal"
)

// held is a launcher that hands each invocation to the test, which plays
// a worker in another process.
type held chan *sortie.Invocation

func (h held) Start(_ context.Context, inv *sortie.Invocation) (sortie.Ref, error) {
	h <- inv
	return sortie.Ref{Provider: "test", ID: inv.LaunchID, RunID: inv.RunID, Attempt: inv.Attempt, LaunchID: inv.LaunchID}, nil
}

// A serving host on DynamoDB reads the table's stream: a run that a
// worker in another process changes wakes the host's followers (the
// engine's Watch, which the API's follow feed waits on), without polling.
func TestServingHostOnDynamoWakesFollowersFromTheStream(t *testing.T) {
	srv, err := dynamodblocal.Start(context.Background())
	if err != nil {
		t.Fatalf("start DynamoDB Local: %v", err)
	}
	t.Cleanup(srv.Stop)
	for k, v := range map[string]string{"AWS_REGION": dynamodblocal.Region, "AWS_ACCESS_KEY_ID": dynamodblocal.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY": dynamodblocal.SecretAccessKey, "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, v)
	}
	db := dynamodb.NewFromConfig(srv.Config())
	if err := dynamo.CreateTable(t.Context(), db, "hosted"); err != nil {
		t.Fatalf("CreateTable = %v", err)
	}
	key, _ := awshost.ParsePageTokenKey("key", "aG9zdCB0ZXN0cycgcGFnZS10b2tlbiBrZXkgMzIgYnl0ZXM=")
	launches := make(held, 1)
	s := serve(t, host.Config{StateDir: t.TempDir(), Launcher: launches,
		AWS: awshost.Config{Table: "hosted", DynamoEndpoint: srv.Endpoint, PageTokenKey: key},
		API: &host.API{Tokens: []string{testToken}, FollowPoll: time.Hour}}, nil)
	run := probe(t, s.client, `{}`)
	var inv *sortie.Invocation
	select {
	case inv = <-launches:
	case <-time.After(waitLong):
		t.Fatal("no launch within 30 s")
	}
	// The engine stores the launcher's reference after Start returns, a
	// write of this host that wakes followers too: let it land first.
	testwait.Until(t, "the launch reference stored", waitLong, func() bool {
		r, err := s.h.Engine().Get(t.Context(), run.ID)
		return err == nil && r.Current() != nil && r.Current().Ref != nil
	})
	wake, stop := s.h.Engine().Watch(run.ID)
	defer stop()
	worker, err := dynamo.New(dynamodb.NewFromConfig(srv.Config()), "hosted", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := worker.Claim(t.Context(), sortie.Claim{RunID: run.ID, Attempt: inv.Attempt, LaunchID: inv.LaunchID, Owner: "elsewhere", NowMs: time.Now().UnixMilli()}); err != nil {
		t.Fatalf("Claim by the worker's own handle = %v", err)
	}
	// The watcher reads the stream from its newest records when it starts:
	// the worker goes on writing (heartbeats) until one wakes the follower.
	testwait.Until(t, "a wake-up of the host's follower by another process's writes (followers poll every hour here)", waitLong, func() bool {
		select {
		case <-wake:
			return true
		default:
		}
		if _, err := worker.Heartbeat(t.Context(), sortie.Claim{RunID: run.ID, Attempt: inv.Attempt, LaunchID: inv.LaunchID, Owner: "elsewhere", NowMs: time.Now().UnixMilli()}); err != nil {
			t.Fatalf("Heartbeat by the worker's own handle = %v", err)
		}
		return false
	})
}
