import { initGraphQLTada } from 'gql.tada';
import {
  Kind,
  OperationTypeNode,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import type { introspection } from './generated/graphql-env.js';
import { PAID_MUTATIONS } from './generated/paid-operations.js';

/**
 * The `graphql()` tag of Ledgerfeed's schema: a document written with it is parsed at compile
 * time, so its variables and its result are typed, and a field the schema lacks is a type error.
 */
export const graphql = initGraphQLTada<{
  introspection: typeof introspection;
  scalars: {
    DateTime: string;
    /** Decimal string: micro-USD do not fit a JS number's precision in every case. */
    MicroUsd: string;
    JSONObject: Record<string, unknown>;
  };
}>();

export type { FragmentOf, ResultOf, VariablesOf } from 'gql.tada';
export { readFragment } from 'gql.tada';

/**
 * How safe it is to send `document` again. A mutation with one paid field (createPost, repost,
 * send, swapToUsdc) is keyed by the `Idempotency-Key` header; one with several is safe only when
 * each carries its own `idempotencyKey` argument (the header covers one). Queries are reads.
 */
export function resendOf(
  document: DocumentNode,
  operationName?: string,
): { idempotencyKey: boolean; safe: boolean } {
  const operation = document.definitions.find(
    (definition): definition is OperationDefinitionNode =>
      definition.kind === Kind.OPERATION_DEFINITION &&
      (operationName === undefined || definition.name?.value === operationName),
  );
  if (!operation || operation.operation === OperationTypeNode.QUERY)
    return { idempotencyKey: false, safe: true };
  if (operation.operation === OperationTypeNode.SUBSCRIPTION) return { idempotencyKey: false, safe: false };
  const paid = paidFields(operation.selectionSet, document);
  if (paid.length === 1) return { idempotencyKey: true, safe: true };
  const keyed = paid.every((field) => field.arguments?.some((arg) => arg.name.value === 'idempotencyKey'));
  // Several paid fields, each keyed: safe. None: an unpaid mutation (a like, a follow) is not
  // sent again after a lost answer, since nothing makes its second run a no-op.
  return { idempotencyKey: false, safe: paid.length > 1 && keyed };
}

/**
 * The paid fields at the root of an operation, as the server counts them (aliases, inline
 * fragments and fragment spreads included): its header rule is "one paid mutation".
 */
function paidFields(selectionSet: SelectionSetNode, document: DocumentNode): FieldNode[] {
  return selectionSet.selections.flatMap((selection): FieldNode[] => {
    if (selection.kind === Kind.FIELD)
      return PAID_MUTATIONS.includes(selection.name.value) ? [selection] : [];
    if (selection.kind === Kind.INLINE_FRAGMENT) return paidFields(selection.selectionSet, document);
    const fragment = document.definitions.find(
      (definition): definition is FragmentDefinitionNode =>
        definition.kind === Kind.FRAGMENT_DEFINITION && definition.name.value === selection.name.value,
    );
    return fragment ? paidFields(fragment.selectionSet, document) : [];
  });
}
