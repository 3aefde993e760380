"""What AWS charges for what Vigil uses: the one list of prices that the cost measurements
(scripts/costs.py) and the capacity plan (``vigil plan``) both price with."""

from __future__ import annotations

# Public on-demand prices, us-east-1, USD, without free tiers (AWS pricing pages, 2025):
PRICE = {
    # DynamoDB on-demand: aws.amazon.com/dynamodb/pricing/on-demand
    "dynamodb_write_unit": 0.625 / 1e6,
    "dynamodb_read_unit": 0.125 / 1e6,
    # SQS standard queues, per request (64 KB chunk): aws.amazon.com/sqs/pricing
    "sqs_request": 0.40 / 1e6,
    # EventBridge Scheduler, per invocation (API calls are not charged):
    # aws.amazon.com/eventbridge/pricing
    "scheduler_invocation": 1.00 / 1e6,
    # API Gateway HTTP API, first 300 million requests a month: aws.amazon.com/api-gateway/pricing
    "http_api_request": 1.00 / 1e6,
    # Lambda: per request, and per GB-second on arm64, first 7.5 billion GB-s a month:
    # aws.amazon.com/lambda/pricing
    "lambda_request": 0.20 / 1e6,
    "lambda_arm64_gb_second": 0.0000133334,
    # SES, outbound email, per message (each recipient counts): aws.amazon.com/ses/pricing
    "ses_email": 0.10 / 1000,
    # S3 Standard: PUT, COPY, POST and LIST requests; GET and all others: aws.amazon.com/s3/pricing
    "s3_write_request": 5.00 / 1e6,
    "s3_read_request": 0.40 / 1e6,
    # CloudWatch Logs, ingestion (Lambda's logs, first 10 TB a month), per GB:
    # aws.amazon.com/cloudwatch/pricing
    "logs_ingested_gb": 0.50,
    # X-Ray, per trace recorded: aws.amazon.com/xray/pricing
    "xray_trace_recorded": 5.00 / 1e6,
}

GB = 1024**3
# A month, as the prices' monthly figures count it.
MONTH_SECONDS = 30 * 86_400
