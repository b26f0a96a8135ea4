// Types of the rtc-agent host SDK (rtc-agent.js).

export declare const VERSION: string;

/** `value` as compact JSON with object keys sorted. */
export declare function canonicalJson(value: unknown): string;
/** SHA-256 (hex) of a client tool's parameter schema, as the server checks it. */
export declare function schemaHash(schema: unknown): Promise<string>;

export declare class RtcError extends Error {
  readonly code: string;
  /** The HTTP status, 0 for a WebSocket error frame. */
  readonly status: number;
  readonly field: string | null;
}

/** What every stored event carries. */
export interface EventBase {
  type: string;
  sessionId: string;
  seq: number;
  timestamp: string;
  /** Set on every event of a test-mode session. */
  testMode?: boolean;
}

export interface SessionStarted extends EventBase { type: "session.started"; assistantId: string; variables: Record<string, unknown> }
export interface TurnStarted extends EventBase { type: "turn.started"; turnId: string }
/** Where a voice turn's time went, in ms (`null` where a step did not happen). */
export interface TurnLatency {
  endpointMs: number | null; sttMs: number | null; llmTtftMs: number | null; chunkMs: number | null;
  ttsTtfbMs: number | null; firstAudioMs: number | null; serverMs: number | null;
}
export interface TurnCompleted extends EventBase {
  type: "turn.completed"; turnId?: string; interrupted: boolean; reason?: string; status?: string; finishReason?: string;
  /** A voice session's turn (docs/voice.md). */
  latency?: TurnLatency;
}
export interface TurnSkipped extends EventBase { type: "turn.skipped"; turnId: string }
export interface MessageDelta extends EventBase { type: "message.delta"; messageId: string; delta: string; role?: string; source?: string; itemId?: string }
export interface MessageCompleted extends EventBase {
  type: "message.completed"; messageId: string; role: "user" | "assistant" | "tool" | "human_agent"; content: string;
  source?: string; interrupted?: boolean; refusal?: boolean; goalId?: string; loopId?: string; fromSessionId?: string;
}
export interface ToolCalled extends EventBase { type: "tool.called"; callId: string; name: string; arguments: string; startup?: boolean; origin?: string }
export interface ToolProgress extends EventBase { type: "tool.progress"; callId: string; name: string; progress: number; total?: number; message?: string }
export interface ToolCompleted extends EventBase { type: "tool.completed"; callId: string; name: string; isError: boolean; result?: unknown; cancelled?: boolean }
export interface ClientToolCall extends EventBase {
  type: "client_tool.call"; callId: string; functionName: string; arguments: Record<string, unknown>; waitForResponse: boolean;
}
export interface StateUpdated extends EventBase { type: "state.updated"; variables: Record<string, unknown> }
export interface AskUserOption { label: string; description?: string }
export interface AskUserQuestionItem { question: string; header?: string; options?: AskUserOption[]; multiSelect?: boolean }
export interface AskUserQuestion extends EventBase { type: "ask_user.question"; callId: string; questions: AskUserQuestionItem[]; subSessionId?: string; subSessionTitle?: string }
export interface AskUserAnswered extends EventBase { type: "ask_user.answered"; callId: string; answers?: string[]; dismissed?: boolean }
export interface HandoffRequested extends EventBase { type: "handoff.requested"; reason?: string; summary?: string }
export interface HandoffReleased extends EventBase { type: "handoff.released" }
export interface SessionEnded extends EventBase { type: "session.ended"; reason?: string | null; endedBy: string }
export interface ContextCompacted extends EventBase {
  type: "context.compacted"; tokensBefore: number; tokensAfter: number; contextWindow: number; summarizedMessages: number;
  reason: "threshold" | "context_length_exceeded";
}
export interface SpeechSide { dialect: string; model?: string; voice?: string }
/** A voice host is attached (docs/voice.md). */
export interface SpeechReady extends EventBase { type: "session.speech_ready"; inputRate: number; outputRate: number; stt: SpeechSide; tts: SpeechSide }
/** The user started speaking: flush what has not played yet. */
export interface SpeechStarted extends EventBase { type: "speech.started"; audioStartMs: number }
export interface SpeechStopped extends EventBase { type: "speech.stopped"; audioEndMs: number }
export interface SpeechFiller extends EventBase { type: "speech.filler"; itemId: string; text: string }
/** A stored spoken answer was cut to what the user heard. */
export interface MessageTruncated extends EventBase { type: "message.truncated"; messageId: string; itemId: string; playedMs: number; content: string }
export interface ErrorEvent extends EventBase { type: "error"; code: string; message: string }
/** Any other event type (todo.updated, goal.updated, workflow.node_entered, …). */
export interface OtherEvent extends EventBase { [field: string]: unknown }

export interface EventMap {
  "session.started": SessionStarted;
  "turn.started": TurnStarted;
  "turn.completed": TurnCompleted;
  "turn.skipped": TurnSkipped;
  "message.delta": MessageDelta;
  "message.completed": MessageCompleted;
  "tool.called": ToolCalled;
  "tool.completed": ToolCompleted;
  "tool.progress": ToolProgress;
  "client_tool.call": ClientToolCall;
  "state.updated": StateUpdated;
  "ask_user.question": AskUserQuestion;
  "ask_user.answered": AskUserAnswered;
  "handoff.requested": HandoffRequested;
  "handoff.released": HandoffReleased;
  "session.ended": SessionEnded;
  "context.compacted": ContextCompacted;
  "session.speech_ready": SpeechReady;
  "speech.started": SpeechStarted;
  "speech.stopped": SpeechStopped;
  "speech.filler": SpeechFiller;
  "message.truncated": MessageTruncated;
  "error": ErrorEvent;
}

export type SessionEvent = EventMap[keyof EventMap] | OtherEvent;
export type ConnectionState = "idle" | "connecting" | "open" | "reconnecting" | "closed";

/** A client tool: its result (or a promise of it); a throw is an error the model reads. */
export type ClientToolHandler = (args: Record<string, unknown>, call: ClientToolCall) => unknown | Promise<unknown>;
export type ClientTool = ClientToolHandler | { handler?: ClientToolHandler; parameters?: object };

/** One answer: an option's label, its number, free text, or several for a multi-select question. */
export type Answer = string | string[];

export interface RtcSessionOptions {
  /** The server, e.g. `https://agents.example.com` (default: the page's origin). */
  baseUrl?: string;
  sessionId: string;
  /** The session's `clientToken` (or a workspace key, server side only). */
  token: string;
  /** A WebSocket constructor; needed on Node 20 (e.g. the `ws` package). */
  WebSocket?: unknown;
  clientTools?: Record<string, ClientTool>;
  /** The last event already seen (default 0: replay from the start). */
  after?: number;
  /** More fields for `client.hello` (a realtime session's `audio`). */
  hello?: () => Record<string, unknown>;
  reconnect?: { initialDelayMs?: number; maxDelayMs?: number };
}

export declare class RtcSession {
  constructor(options: RtcSessionOptions);
  readonly lastSeq: number;
  readonly state: ConnectionState;
  on<K extends keyof EventMap>(type: K, listener: (event: EventMap[K]) => void): () => void;
  on(type: "*", listener: (event: SessionEvent) => void): () => void;
  on(type: "frame", listener: (frame: SessionEvent | { type: string; [field: string]: unknown }) => void): () => void;
  on(type: "status", listener: (state: ConnectionState) => void): () => void;
  on(type: "frame.error", listener: (error: RtcError) => void): () => void;
  on(type: string, listener: (event: OtherEvent) => void): () => void;
  connect(): this;
  send(frame: Record<string, unknown>): boolean;
  sendMessage(text: string): Promise<void>;
  answer(answers: Answer[] | Record<string, Answer>, callId?: string): Promise<void>;
  respond(callId: string, result: unknown): boolean;
  fail(callId: string, message: string): boolean;
  close(): void;
}
