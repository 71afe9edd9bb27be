package main

import (
	"context"
	"errors"
	"fmt"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/opensearch-project/opensearch-go/v4/signer"
	"github.com/opensearch-project/opensearch-go/v4/signer/awsv2"
)

// awsConfig signs OpenSearch requests with AWS SigV4 (Amazon OpenSearch
// Service, or Serverless with service aoss). Credentials come from the
// AWS SDK's default chain: AWS_* variables, the shared config files, web
// identity (EKS IRSA / pod identity), then the instance role. The region
// defaults to AWS_REGION.
type awsConfig struct {
	SigV4   bool
	Region  string
	Service string
}

func (c *awsConfig) bind(fs *flagSet) {
	fs.BoolVar(&c.SigV4, "opensearch-aws-sigv4", false, "sign OpenSearch requests with AWS SigV4 (credentials from the AWS SDK's default chain)")
	fs.StringVar(&c.Region, "opensearch-aws-region", "", "AWS region of the domain; empty: AWS_REGION")
	fs.StringVar(&c.Service, "opensearch-aws-service", "es", "SigV4 service: es (OpenSearch Service) or aoss (Serverless)")
}

func (c *awsConfig) validate(username string) error {
	if !c.SigV4 {
		return nil
	}
	var errs []error
	if c.Service != "es" && c.Service != "aoss" {
		errs = append(errs, fmt.Errorf("opensearch-aws-service %q: want es or aoss", c.Service))
	}
	if username != "" {
		errs = append(errs, errors.New("opensearch-aws-sigv4 and opensearch-username exclude each other"))
	}
	return errors.Join(errs...)
}

// signer is nil without SigV4.
func (c *awsConfig) signer() (signer.Signer, error) {
	if !c.SigV4 {
		return nil, nil
	}
	var opts []func(*awsconfig.LoadOptions) error
	if c.Region != "" {
		opts = append(opts, awsconfig.WithRegion(c.Region))
	}
	// Loading reads variables and files only; credentials are fetched
	// (and refreshed) when a request is signed.
	cfg, err := awsconfig.LoadDefaultConfig(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("opensearch aws config: %w", err)
	}
	if cfg.Region == "" {
		return nil, errors.New("opensearch-aws-sigv4: no region (set -opensearch-aws-region or AWS_REGION)")
	}
	s, err := awsv2.NewSignerWithService(cfg, c.Service)
	if err != nil {
		return nil, fmt.Errorf("opensearch sigv4 signer: %w", err)
	}
	return s, nil
}
