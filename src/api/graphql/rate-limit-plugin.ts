import SchemaBuilder, {
  BasePlugin,
  type FieldNullability,
  type InputFieldMap,
  type PothosOutputFieldConfig,
  type SchemaTypes,
  type TypeParam,
} from '@pothos/core';
import type { GraphQLFieldResolver } from 'graphql';
import type { RateLimitBucket } from '../../domain/rate-limits/rate-limit-policy.js';
import type { GraphQLContext } from './context.js';
import { spendFor } from './rate-limits.js';

/**
 * Rate limits declared on the field, not called from its resolver: every mutation and subscription
 * field must name the bucket one call spends (`rateLimit`, its REST twin's); the type checker
 * refuses one that does not, so a new field cannot forget it. Queries spend by their cost, once per
 * operation (rate-limits.ts). The spending runs inside scope-auth's wrapping (the plugin is listed
 * after it), so a client sees 401, then 403, then 429, as in REST. The bucket is also put in the
 * field's `extensions.rateLimit`, where tests read it.
 */
export class RateLimitPlugin<Types extends SchemaTypes> extends BasePlugin<Types> {
  override onOutputFieldConfig(fieldConfig: PothosOutputFieldConfig<Types>): PothosOutputFieldConfig<Types> {
    const bucket = bucketOf(fieldConfig);
    if (!bucket) return fieldConfig;
    return { ...fieldConfig, extensions: { ...fieldConfig.extensions, rateLimit: bucket } };
  }

  override wrapResolve(
    resolver: GraphQLFieldResolver<unknown, Types['Context'], object>,
    fieldConfig: PothosOutputFieldConfig<Types>,
  ): GraphQLFieldResolver<unknown, Types['Context'], object> {
    const bucket = bucketOf(fieldConfig);
    if (!bucket || fieldConfig.kind === 'Subscription') return resolver;
    return async (parent, args, context, info) => {
      await spendFor(context as GraphQLContext, bucket);
      return resolver(parent, args, context, info);
    };
  }

  override wrapSubscribe(
    subscribe: GraphQLFieldResolver<unknown, Types['Context'], object> | undefined,
    fieldConfig: PothosOutputFieldConfig<Types>,
  ): GraphQLFieldResolver<unknown, Types['Context'], object> | undefined {
    const bucket = bucketOf(fieldConfig);
    if (!bucket || !subscribe) return subscribe;
    return async (parent, args, context, info) => {
      await spendFor(context as GraphQLContext, bucket);
      return subscribe(parent, args, context, info);
    };
  }
}

function bucketOf<Types extends SchemaTypes>(
  fieldConfig: PothosOutputFieldConfig<Types>,
): RateLimitBucket | undefined {
  if (fieldConfig.kind !== 'Mutation' && fieldConfig.kind !== 'Subscription') return undefined;
  return (fieldConfig.pothosOptions as { rateLimit?: RateLimitBucket }).rateLimit;
}

/** The name `plugins` lists it by, after scope-auth. */
export const RATE_LIMIT_PLUGIN = 'rateLimit';
SchemaBuilder.registerPlugin(RATE_LIMIT_PLUGIN, RateLimitPlugin);

// Declaration merging needs the very type parameters Pothos declares, used or not.
/* eslint-disable @typescript-eslint/no-unused-vars */
declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  export namespace PothosSchemaTypes {
    export interface Plugins<Types extends SchemaTypes> {
      rateLimit: RateLimitPlugin<Types>;
    }
    export interface MutationFieldOptions<
      Types extends SchemaTypes,
      Type extends TypeParam<Types>,
      Nullable extends FieldNullability<Type>,
      Args extends InputFieldMap,
      ResolveReturnShape,
    > {
      /** The rate-limit bucket one call spends: its REST twin's. */
      rateLimit: RateLimitBucket;
    }
    export interface SubscriptionFieldOptions<
      Types extends SchemaTypes,
      Type extends TypeParam<Types>,
      Nullable extends FieldNullability<Type>,
      Args extends InputFieldMap,
      ResolveShape,
      ResolveReturnShape,
    > {
      /** The rate-limit bucket starting a subscription spends. */
      rateLimit: RateLimitBucket;
    }
  }
}
/* eslint-enable @typescript-eslint/no-unused-vars */
