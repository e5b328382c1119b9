import {
  getNamedType,
  getOperationAST,
  GraphQLError,
  isCompositeType,
  isInterfaceType,
  isObjectType,
  Kind,
  OperationTypeNode,
  SchemaMetaFieldDef,
  TypeMetaFieldDef,
  TypeNameMetaFieldDef,
  type ArgumentNode,
  type DocumentNode,
  type ExecutionArgs,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ParseOptions,
  type SelectionSetNode,
  type Source,
  type ValidationRule,
  type ValueNode,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { GraphQLContext } from './context.js';
import { appErrorOf, toGraphqlError } from './errors.js';
import { spendOperation } from './rate-limits.js';

/**
 * What one GraphQL operation may ask for, checked while it is validated (before anything runs),
 * and what it costs against the caller's rate-limit budget (spent once, before it executes).
 *
 * Cost estimates the work. Every field costs 1 (`__typename` 0: it is known without resolving
 * anything); a field that makes its own backend round trip each time it is selected, which every
 * root field does and the fields in LOADING_FIELDS do, costs LOAD_COST. A field with a `first`,
 * `last` or `limit` argument multiplies the cost of what it selects by the page it asks for: the
 * literal, the variable's value once known (LARGEST_PAGE while validating, when it is not), else
 * the argument's schema default, else DEFAULT_PAGE. So `feed(first: 50) { edges { node {
 * replies(first: 50) ... } } }` is priced as the 2,500 nodes and 50 reply queries it may run.
 * Introspection (`__schema`, `__type` and everything under them) costs like any other field, and
 * every alias is a selection of its own: aliases are how one request repeats a field thousands of
 * times, so they are counted and capped (MAX_ALIASES).
 *
 * The numbers, checked against every query our dashboards (dashboards/web) and tests send: the
 * heaviest dashboard query selects 21 fields with 2 aliases and costs ~650 (50 reconciliation
 * exceptions); GraphiQL's introspection query selects ~230 fields once its fragments are expanded.
 */

/**
 * Tokens per document, checked while it is parsed, so a document stuffed with thousands of aliases
 * is refused before graphql-js's own validation rules spend ~20 ms on its 40 KB. About ten times
 * GraphiQL's introspection query (~190 tokens); a document at MAX_QUERY_FIELDS needs ~500-1,500.
 */
export const MAX_QUERY_TOKENS = 2_000;
/** Nesting of fields outside introspection (whose own nesting graphql-js's MaxIntrospectionDepthRule bounds). */
export const MAX_QUERY_DEPTH = 12;
/** The most an operation may cost: 100 backend round trips, or 10,000 objects. */
export const MAX_QUERY_COST = 10_000;
/** Field selections per operation, fragments expanded: twice GraphiQL's introspection query. */
export const MAX_QUERY_FIELDS = 500;
/** Aliased selections per operation, fragments expanded. Our dashboards use 2. */
export const MAX_QUERY_ALIASES = 30;
/** Top-level fields per operation: each runs its own resolver and, for a mutation, moves money. */
export const MAX_ROOT_FIELDS = 10;

/** Cost of a field that makes its own backend round trip (a query, a ClickHouse read, an RPC call). */
export const LOAD_COST = 100;

/** What `first: $variable` is priced at before its value is known: the largest page any field serves. */
const LARGEST_PAGE = 100;
/** What a paged field without a page argument is priced at: the default page of every connection. */
const DEFAULT_PAGE = 20;
const PAGE_ARGUMENTS = ['first', 'last', 'limit'] as const;

/**
 * Fields below the root whose resolver makes its own backend round trip per selection (not
 * batched through a per-request DataLoader), as `Type.field`. A new field that runs its own query
 * belongs here; a test checks that every entry names a field of the schema.
 */
export const LOADING_FIELDS: ReadonlySet<string> = new Set([
  'Viewer.nativeTokens',
  'Viewer.earnings',
  'Viewer.apiKeys',
  'Viewer.topPosts',
  'Viewer.transactions',
  'Viewer.followers',
  'Viewer.following',
  'Account.followers',
  'Account.following',
  'Account.posts',
  'Post.replies',
]);

/** What one operation asks for, fragments expanded. */
export interface OperationMeasure {
  /** Deepest nesting of fields, introspection counted as one level. */
  depth: number;
  cost: number;
  /** Field selections, `__typename` and introspection included. */
  fields: number;
  /** Selections that carry an alias. */
  aliases: number;
  /** Fields at the top level. */
  rootFields: number;
}

interface Measure {
  depth: number;
  cost: number;
  fields: number;
  aliases: number;
  /** Fields directly in this selection set (fragments expanded). */
  width: number;
}

const NOTHING: Measure = { depth: 0, cost: 0, fields: 0, aliases: 0, width: 0 };

/**
 * Measures `operation`. `variables` are the request's raw variables once known (execution); without
 * them (validation) a variable page argument is priced as the largest page.
 */
export function measureOperation(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables?: Readonly<Record<string, unknown>> | null,
): OperationMeasure {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  const defaults = new Map<string, ValueNode>();
  for (const definition of operation.variableDefinitions ?? []) {
    if (definition.defaultValue) defaults.set(definition.variable.name.value, definition.defaultValue);
  }
  const walker = new Walker(schema, fragments, variables ? { given: variables, defaults } : undefined);
  const root = schema.getRootType(operation.operation) ?? undefined;
  const measured = walker.measure(operation.selectionSet, root, true);
  return {
    depth: measured.depth,
    cost: measured.cost,
    fields: measured.fields,
    aliases: measured.aliases,
    rootFields: measured.width,
  };
}

class Walker {
  /**
   * Each fragment is measured once per operation: a fragment spread twice in a fragment spread
   * twice... would otherwise make this walk exponential in the document's size.
   */
  private readonly fragmentMeasures = new Map<string, Measure>();
  private readonly visiting = new Set<string>();

  constructor(
    private readonly schema: GraphQLSchema,
    private readonly fragments: ReadonlyMap<string, FragmentDefinitionNode>,
    private readonly variables:
      { given: Readonly<Record<string, unknown>>; defaults: ReadonlyMap<string, ValueNode> } | undefined,
  ) {}

  measure(
    selectionSet: SelectionSetNode,
    parent: GraphQLCompositeType | undefined,
    atRoot: boolean,
  ): Measure {
    const total: Measure = { ...NOTHING };
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) {
        const name = selection.name.value;
        const field = this.fieldOf(parent, name);
        const child = field ? getNamedType(field.type) : undefined;
        const inner = selection.selectionSet
          ? this.measure(selection.selectionSet, isCompositeType(child) ? child : undefined, false)
          : NOTHING;
        const introspection = name === '__schema' || name === '__type';
        total.depth = Math.max(total.depth, 1 + (introspection ? 0 : inner.depth));
        total.cost +=
          this.weightOf(parent, name, atRoot) + this.pageOf(field, selection.arguments ?? []) * inner.cost;
        total.fields += 1 + inner.fields;
        total.aliases += (selection.alias ? 1 : 0) + inner.aliases;
        total.width += 1;
        continue;
      }
      const inner =
        selection.kind === Kind.INLINE_FRAGMENT
          ? this.measure(
              selection.selectionSet,
              selection.typeCondition ? this.compositeType(selection.typeCondition.name.value) : parent,
              atRoot,
            )
          : this.fragment(selection.name.value, atRoot);
      total.depth = Math.max(total.depth, inner.depth);
      total.cost += inner.cost;
      total.fields += inner.fields;
      total.aliases += inner.aliases;
      total.width += inner.width;
    }
    return total;
  }

  private fragment(name: string, atRoot: boolean): Measure {
    // At the root a fragment's fields are root fields (LOAD_COST each): memoised apart.
    const key = `${atRoot ? 'root' : 'inner'}:${name}`;
    const known = this.fragmentMeasures.get(key);
    if (known) return known;
    const definition = this.fragments.get(name);
    // Unknown fragments and cycles: other validation rules report them.
    if (!definition || this.visiting.has(name)) return NOTHING;
    this.visiting.add(name);
    const measured = this.measure(
      definition.selectionSet,
      this.compositeType(definition.typeCondition.name.value),
      atRoot,
    );
    this.visiting.delete(name);
    this.fragmentMeasures.set(key, measured);
    return measured;
  }

  private compositeType(name: string): GraphQLCompositeType | undefined {
    const type = this.schema.getType(name);
    return isCompositeType(type) ? type : undefined;
  }

  private fieldOf(
    parent: GraphQLCompositeType | undefined,
    name: string,
  ): GraphQLField<unknown, unknown> | undefined {
    if (name === '__typename') return TypeNameMetaFieldDef;
    if (parent && parent === this.schema.getQueryType()) {
      if (name === '__schema') return SchemaMetaFieldDef;
      if (name === '__type') return TypeMetaFieldDef;
    }
    if (isObjectType(parent) || isInterfaceType(parent)) return parent.getFields()[name];
    return undefined; // an unknown field or a union's: FieldsOnCorrectTypeRule reports it
  }

  private weightOf(parent: GraphQLCompositeType | undefined, name: string, atRoot: boolean): number {
    if (name === '__typename') return 0;
    if (name.startsWith('__')) return 1;
    if (atRoot || (parent && LOADING_FIELDS.has(`${parent.name}.${name}`))) return LOAD_COST;
    return 1;
  }

  /**
   * The page a field asks for: the largest page argument given; with none given (or all null),
   * the largest schema default of its page arguments, else DEFAULT_PAGE; 1 for a field without one.
   */
  private pageOf(field: GraphQLField<unknown, unknown> | undefined, nodes: readonly ArgumentNode[]): number {
    let asked: number | undefined;
    let fallback: number | undefined;
    for (const name of PAGE_ARGUMENTS) {
      const definition = field?.args.find((arg) => arg.name === name);
      const node = nodes.find((arg) => arg.name.value === name);
      const size = node ? this.sizeOf(node.value) : undefined;
      if (size !== undefined) asked = Math.max(asked ?? 1, size);
      if (definition) {
        const byDefault =
          typeof definition.defaultValue === 'number' ? definition.defaultValue : DEFAULT_PAGE;
        fallback = Math.max(fallback ?? 1, byDefault);
      }
    }
    return asked ?? fallback ?? 1;
  }

  /** A page argument's value: a number, or undefined where the default applies (null, unset variable). */
  private sizeOf(value: ValueNode): number | undefined {
    if (value.kind === Kind.INT) return Math.max(1, Number(value.value));
    if (value.kind === Kind.NULL) return undefined;
    // Any other literal is not an Int: ValuesOfCorrectTypeRule refuses it.
    if (value.kind !== Kind.VARIABLE) return LARGEST_PAGE;
    if (!this.variables) return LARGEST_PAGE;
    const name = value.name.value;
    const given = this.variables.given[name];
    if (typeof given === 'number' && Number.isFinite(given)) return Math.max(1, given);
    if (given === null) return undefined;
    if (given === undefined) {
      const fallback = this.variables.defaults.get(name);
      return fallback ? this.sizeOf(fallback) : undefined;
    }
    return LARGEST_PAGE; // not an Int: coercion refuses it
  }
}

/** The depth, cost, field, alias and root-field limits as one validation rule. */
export function queryLimitsRule(maxDepth = MAX_QUERY_DEPTH, maxCost = MAX_QUERY_COST): ValidationRule {
  return (context) => ({
    OperationDefinition(operation) {
      const measured = measureOperation(context.getSchema(), context.getDocument(), operation);
      const name = operation.name ? ` ${operation.name.value}` : '';
      const refuse = (message: string, extensions: Record<string, unknown>) =>
        context.reportError(new GraphQLError(message, { nodes: [operation], extensions }));
      if (measured.fields > MAX_QUERY_FIELDS) {
        refuse(
          `The operation${name} selects ${measured.fields} fields (fragments expanded); at most ${MAX_QUERY_FIELDS} are allowed. Split it into several operations.`,
          { code: 'QUERY_TOO_LARGE', fields: measured.fields, maxFields: MAX_QUERY_FIELDS },
        );
      }
      if (measured.aliases > MAX_QUERY_ALIASES) {
        refuse(
          `The operation${name} uses ${measured.aliases} aliases; at most ${MAX_QUERY_ALIASES} are allowed. Send several operations instead of repeating a field.`,
          { code: 'TOO_MANY_ALIASES', aliases: measured.aliases, maxAliases: MAX_QUERY_ALIASES },
        );
      }
      if (measured.rootFields > MAX_ROOT_FIELDS) {
        refuse(
          `The operation${name} has ${measured.rootFields} top-level fields; at most ${MAX_ROOT_FIELDS} are allowed.`,
          { code: 'TOO_MANY_ROOT_FIELDS', rootFields: measured.rootFields, maxRootFields: MAX_ROOT_FIELDS },
        );
      }
      if (measured.depth > maxDepth) {
        refuse(
          `The operation${name} nests ${measured.depth} levels of fields; at most ${maxDepth} are allowed. Split it into several queries.`,
          { code: 'QUERY_TOO_DEEP', depth: measured.depth, maxDepth },
        );
      }
      if (measured.cost > maxCost) {
        refuse(
          `The operation${name} may cost about ${measured.cost} (objects it loads, and ${LOAD_COST} per backend query); at most ${maxCost} is allowed. Ask for smaller pages (first, limit), fewer nested lists or fewer repeated fields.`,
          { code: 'QUERY_TOO_COSTLY', cost: measured.cost, maxCost },
        );
      }
    },
  });
}

/**
 * The limits as a Yoga plugin: the token limit runs with the parser, the rule with the other
 * validation rules (an operation over a limit never executes), and each query or mutation spends
 * its caller's rate-limit budget by its cost, priced with the request's variables, once, before it
 * executes (see spendOperation). A refused operation answers HTTP 429 with RATE_LIMITED and
 * executes nothing.
 */
export function queryLimitsPlugin(): Plugin {
  return {
    onParse: ({ parseFn, setParseFn }) =>
      setParseFn((source: string | Source, options?: ParseOptions): DocumentNode => {
        try {
          return parseFn(source, { ...options, maxTokens: MAX_QUERY_TOKENS }) as DocumentNode;
        } catch (error) {
          // graphql-js words it "Document contains more that N tokens. Parsing aborted." (sic);
          // given here the code our other size limits carry. Yoga's parse may come from graphql's
          // CommonJS build, whose GraphQLError is another class: matched by message.
          if (error instanceof Error && /tokens\. Parsing aborted\.$/.test(error.message)) {
            throw new GraphQLError(
              `The document has more than ${MAX_QUERY_TOKENS} tokens (names, punctuation, values); at most ${MAX_QUERY_TOKENS} are allowed. Send several smaller operations.`,
              { extensions: { code: 'QUERY_TOO_LARGE', maxTokens: MAX_QUERY_TOKENS } },
            );
          }
          throw error;
        }
      }),
    onValidate: ({ addValidationRule }) => addValidationRule(queryLimitsRule()),
    onExecute: async ({
      args,
      setResultAndStopExecution,
    }: {
      args: ExecutionArgs;
      setResultAndStopExecution: (result: { errors: GraphQLError[] }) => void;
    }) => {
      const operation = getOperationAST(args.document, args.operationName);
      if (!operation || operation.operation === OperationTypeNode.SUBSCRIPTION) return;
      const ctx = args.contextValue as GraphQLContext;
      const { cost } = measureOperation(args.schema, args.document, operation, args.variableValues);
      try {
        await spendOperation(ctx, operation.operation, cost);
      } catch (error) {
        const appError = appErrorOf(error);
        if (appError?.code !== 'rate_limited') throw error;
        const retryAfter = appError.details.retryAfterSeconds;
        setResultAndStopExecution({
          errors: [
            toGraphqlError(appError, undefined, {
              http: {
                status: 429,
                ...(typeof retryAfter === 'number' ? { headers: { 'retry-after': String(retryAfter) } } : {}),
              },
            }),
          ],
        });
      }
    },
  };
}
