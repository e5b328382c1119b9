import {
  GraphQLError,
  Kind,
  type FragmentDefinitionNode,
  type SelectionSetNode,
  type ValidationRule,
} from 'graphql';

/**
 * Depth and cost limits, checked while the operation is validated (before anything runs).
 *
 * Depth counts nested fields. Cost estimates the work: every field costs 1, and a field with a
 * `first` argument multiplies the cost of what it selects by the page size it asks for (a
 * variable counts as the largest page, 50), so `feed(first: 50) { edges { node { replies(first:
 * 50) ... } } }` is priced as the 2,500 nodes it may load. Introspection (`__schema`, `__type`) is
 * not counted: GraphiQL and code generators must always work.
 */
export const MAX_QUERY_DEPTH = 12;
export const MAX_QUERY_COST = 10_000;
/** What `first: $variable` is priced at: the largest page any connection serves. */
const VARIABLE_PAGE = 50;

export function queryLimitsRule(maxDepth = MAX_QUERY_DEPTH, maxCost = MAX_QUERY_COST): ValidationRule {
  return (context) => {
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const definition of context.getDocument().definitions) {
      if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
    }
    return {
      OperationDefinition(operation) {
        const { depth, cost } = measure(operation.selectionSet, fragments, new Set());
        const name = operation.name ? ` ${operation.name.value}` : '';
        if (depth > maxDepth) {
          context.reportError(
            new GraphQLError(
              `The operation${name} nests ${depth} levels of fields; at most ${maxDepth} are allowed. Split it into several queries.`,
              { nodes: [operation], extensions: { code: 'QUERY_TOO_DEEP', depth, maxDepth } },
            ),
          );
        }
        if (cost > maxCost) {
          context.reportError(
            new GraphQLError(
              `The operation${name} may load about ${cost} objects; at most ${maxCost} are allowed. Ask for smaller pages (first) or fewer nested lists.`,
              { nodes: [operation], extensions: { code: 'QUERY_TOO_COSTLY', cost, maxCost } },
            ),
          );
        }
      },
    };
  };
}

function measure(
  selectionSet: SelectionSetNode,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  visiting: Set<string>,
): { depth: number; cost: number } {
  let depth = 0;
  let cost = 0;
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) {
      if (selection.name.value.startsWith('__')) continue;
      const inner = selection.selectionSet
        ? measure(selection.selectionSet, fragments, visiting)
        : { depth: 0, cost: 0 };
      depth = Math.max(depth, 1 + inner.depth);
      cost += 1 + pageSize(selection.arguments ?? []) * inner.cost;
      continue;
    }
    const set =
      selection.kind === Kind.INLINE_FRAGMENT
        ? selection.selectionSet
        : visiting.has(selection.name.value)
          ? undefined // a cycle: another rule reports it
          : fragments.get(selection.name.value)?.selectionSet;
    if (!set) continue;
    if (selection.kind === Kind.FRAGMENT_SPREAD) visiting.add(selection.name.value);
    const inner = measure(set, fragments, visiting);
    if (selection.kind === Kind.FRAGMENT_SPREAD) visiting.delete(selection.name.value);
    depth = Math.max(depth, inner.depth);
    cost += inner.cost;
  }
  return { depth, cost };
}

/** The page a field asks for: its `first` literal, the largest page for a variable, else 1. */
function pageSize(
  args: ReadonlyArray<{ name: { value: string }; value: { kind: Kind; value?: unknown } }>,
): number {
  const first = args.find((arg) => arg.name.value === 'first');
  if (!first) return 1;
  if (first.value.kind === Kind.INT) return Math.max(1, Number(first.value.value));
  return VARIABLE_PAGE;
}
