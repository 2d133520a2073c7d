package cloudrun_test

import (
	"context"
	"fmt"

	run "cloud.google.com/go/run/apiv2"

	"github.com/sortie-run/sortie/launchers/cloudrun"
)

// A Jobs launcher of a pre-deployed Job, with the Admin API clients of the
// ambient Google credentials.
func ExampleNewJobs() {
	ctx := context.Background()
	jobs, err := run.NewJobsClient(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer jobs.Close()
	execs, err := run.NewExecutionsClient(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer execs.Close()
	l, err := cloudrun.NewJobs(jobs, execs, cloudrun.JobsOptions{Job: "projects/my-project/locations/europe-west1/jobs/sortie-worker"})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = l // pass to sortie.NewEngine
}

// A Job name that is not fully qualified is refused.
func ExampleNewJobs_invalid() {
	_, err := cloudrun.NewJobs(&run.JobsClient{}, &run.ExecutionsClient{}, cloudrun.JobsOptions{Job: "sortie-worker"})
	fmt.Println(err)
	// Output: invalid job: "sortie-worker" is not projects/PROJECT/locations/REGION/jobs/JOB
}
