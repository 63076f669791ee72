package s3test

import (
	"context"
	"fmt"
	"os/exec"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Client is an S3 client of the server's root account, for a test to set
// the server up and to look at what a store wrote, beside the store.
func (s *Server) Client() *s3.Client { return s.ClientAs(s.Access, s.Secret) }

// ClientAs is an S3 client of the server with the given keys.
func (s *Server) ClientAs(access, secret string) *s3.Client {
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(access, secret, ""),
	})
}

// Bucket creates a bucket. With retentionDays > 0 it has Object Lock, with
// a default retention of that many days in compliance mode: every object
// version written to it can be neither deleted nor changed, by anyone,
// until then.
func (s *Server) Bucket(t testing.TB, name string, retentionDays int32) {
	t.Helper()
	ctx := context.Background()
	c := s.Client()
	in := &s3.CreateBucketInput{Bucket: &name}
	if retentionDays > 0 {
		in.ObjectLockEnabledForBucket = aws.Bool(true)
	}
	if _, err := c.CreateBucket(ctx, in); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	if retentionDays == 0 {
		return
	}
	_, err := c.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{
		Bucket: &name,
		ObjectLockConfiguration: &types.ObjectLockConfiguration{
			ObjectLockEnabled: types.ObjectLockEnabledEnabled,
			Rule: &types.ObjectLockRule{DefaultRetention: &types.DefaultRetention{
				Mode: types.ObjectLockRetentionModeCompliance,
				Days: aws.Int32(retentionDays),
			}},
		},
	})
	if err != nil {
		t.Fatalf("object lock on bucket %s: %v", name, err)
	}
}

// User creates an account of role "user" (it owns nothing and may do only
// what a bucket policy grants it) on a server started with IAM, and
// grants it on bucket exactly what the program needs: to create objects,
// read them and list the bucket. It may not delete. The keys are the
// user's name and secret.
func (s *Server) User(t testing.TB, bucket, name, secret string) {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "admin", "--access", s.Access, "--secret", s.Secret, "--endpoint-url", s.Endpoint,
		"create-user", "--access", name, "--secret", secret, "--role", "user").CombinedOutput()
	if err != nil {
		t.Fatalf("create user %s: %v: %s", name, err, out)
	}
	policy := fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":[%q]},`+
		`"Action":["s3:PutObject","s3:GetObject","s3:ListBucket"],"Resource":["arn:aws:s3:::%s","arn:aws:s3:::%s/*"]}]}`, name, bucket, bucket)
	if _, err := s.Client().PutBucketPolicy(context.Background(), &s3.PutBucketPolicyInput{Bucket: &bucket, Policy: &policy}); err != nil {
		t.Fatalf("policy of bucket %s: %v", bucket, err)
	}
}
