package s3store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/s3store"
	"github.com/metricproof/metricproof/adapters/s3store/s3test"
)

func TestOpenTakesKeysRegionAndEndpointFromAProfileOfTheStandardFiles(t *testing.T) {
	is := is.New(t)
	srv := serve(t, "profiled")
	dir := t.TempDir()
	config, credentials := filepath.Join(dir, "config"), filepath.Join(dir, "credentials")
	is.NoErr(os.WriteFile(config, []byte("[profile team]\nregion = us-east-1\nendpoint_url = "+srv.Endpoint+"\n"), 0o600))
	is.NoErr(os.WriteFile(credentials, []byte("[team]\naws_access_key_id = "+srv.Access+"\naws_secret_access_key = "+srv.Secret+"\n"), 0o600))
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_ENDPOINT_URL_S3"} {
		s3test.Unsetenv(t, k)
	}
	t.Setenv("AWS_CONFIG_FILE", config)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", credentials)
	t.Setenv("AWS_PROFILE", "team")
	store := open(t, "s3://profiled/p")
	commitRun(t, store, ".", "r1")
	run, err := store.ReadRun(".", "r1", runNames, 1024)
	is.NoErr(err)
	is.True(run.Exists && run.Dir)
}

func TestOpenRefusesAURLOrAConfigurationItCannotUseAndSaysNoPath(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none")
	broken := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(broken, []byte("[profile team\nregion"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_DEFAULT_PROFILE"} {
		s3test.Unsetenv(t, k)
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	tests := []struct {
		name, url, configFile, profile string
		want                           error
	}{
		{"not an s3 URL", "/var/evidence", none, "", s3store.ErrURL},
		{"no region anywhere", "s3://evidence/p", none, "", s3store.ErrConfig},
		{"a profile that does not exist", "s3://evidence/p", none, "nobody", s3store.ErrConfig},
		{"a config file that does not parse", "s3://evidence/p", broken, "team", s3store.ErrConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			t.Setenv("AWS_CONFIG_FILE", tt.configFile)
			if tt.profile != "" {
				t.Setenv("AWS_PROFILE", tt.profile)
			}
			_, err := s3store.Open(context.Background(), tt.url)
			is.True(errors.Is(err, tt.want))
			is.True(!strings.Contains(err.Error(), string(filepath.Separator)+"tmp")) // no path of the machine
		})
	}
}
