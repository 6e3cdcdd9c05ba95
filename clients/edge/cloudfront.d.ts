// Types of @waitroom/edge/cloudfront: the connector as a Lambda@Edge viewer-request function.
import type { Env } from "./edge.js";

export interface CloudFrontHeaders {
  [lowerCaseName: string]: Array<{ key?: string; value: string }>;
}

export interface CloudFrontRequest {
  clientIp: string;
  method: string;
  uri: string;
  querystring: string;
  headers: CloudFrontHeaders;
}

export interface CloudFrontResponse {
  status: string;
  headers: CloudFrontHeaders;
  body?: string;
}

export interface CloudFrontRequestEvent {
  Records: Array<{ cf: { request: CloudFrontRequest } }>;
}

/** The request to send on to the origin, or the response to answer with. */
export function cloudfront(event: CloudFrontRequestEvent, env: Env): Promise<CloudFrontRequest | CloudFrontResponse>;
