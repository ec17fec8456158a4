"""A local S3-compatible server for the attachment tests, and checks of what it
holds made with boto3, the official AWS SDK for Python.

    s3.py serve BUCKET            start moto's S3 server on a free port, create
                                  BUCKET, print "port N", serve until stdin closes
    s3.py list ENDPOINT BUCKET    print "KEY SIZE SHA256" for every object
"""

import hashlib
import sys

import boto3


def client(endpoint):
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )


def serve(bucket):
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    port = server._server.server_port
    client(f"http://127.0.0.1:{port}").create_bucket(Bucket=bucket)
    print(f"port {port}", flush=True)
    sys.stdin.read()
    server.stop()


def list_objects(endpoint, bucket):
    s3 = client(endpoint)
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
    for page in pages:
        for obj in page.get("Contents", []):
            body = s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
            print(obj["Key"], len(body), hashlib.sha256(body).hexdigest())


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    elif sys.argv[1] == "list":
        list_objects(sys.argv[2], sys.argv[3])
    else:
        sys.exit(f"unknown command {sys.argv[1]}")
