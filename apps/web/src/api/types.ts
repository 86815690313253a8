import type { components } from '@teamchat/client';

/**
 * Response shapes the pages read: the generated schemas of the OpenAPI document (docs/openapi.json),
 * so a change to a route's answer is a type error where a page reads it.
 */
type Schemas = components['schemas'];

export type EndpointHealth = Schemas['WebhookEndpointHealth'];
export type Endpoint = Schemas['WebhookEndpoint'];
export type TestDelivery = Schemas['TestDelivery'];
export type Delivery = Schemas['WebhookDelivery'];
export type Channel = Schemas['Channel'];
export type Message = Schemas['Message'];
export type FileInfo = Schemas['File'];
/** A message's attachment: a file (`file_id`, with its name, size and type) or a link (`url`). */
export type Attachment = Schemas['Attachment'];
export type MirrorHealth = NonNullable<Schemas['MirrorHealth']>;
export type Mirror = Schemas['Mirror'];
export type MirrorDelivery = Schemas['MirrorDelivery'];
