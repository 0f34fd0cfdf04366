package io.sumi.consumer;

import io.sumi.consumer.exception.MissingIdempotencyKeyException;
import io.sumi.consumer.exception.ReconciliationRequiredException;
import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Makes a message listener idempotent: each message key runs the method once, however often it is
 * delivered and however many consumers receive it at the same moment.
 *
 * <p>The key is taken from the {@code outbox-id} header, then the {@code idempotency-key} header
 * (header names configurable), then {@link #key()}. A message without a usable key fails with a
 * {@link MissingIdempotencyKeyException} and is never processed blindly. Exceptions thrown by the
 * method propagate unchanged, so the listener container retries and dead-letters as configured;
 * the ledger never records a failed message as done.
 *
 * <pre>{@code
 * @KafkaListener(topics = "mail.send")
 * @IdempotentHandler(mode = IdempotencyMode.LEASE)
 * void send(MailRequest mail) {
 *     mailer.send(mail, IdempotencyContext.current().key());
 * }
 * }</pre>
 */
@Target({ElementType.METHOD, ElementType.ANNOTATION_TYPE})
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface IdempotentHandler {

    /**
     * The ledger namespace. Defaults to the listener id, or else {@code SimpleClassName.method}.
     * Two handlers that must each process every message need different namespaces; tenants can be
     * folded in here.
     */
    String consumer() default "";

    /**
     * A SpEL expression that computes the key when no key header is present, over the variables
     * {@code #message} (the record or message as the broker delivered it), {@code #payload} and
     * {@code #headers} (a map of header values, byte arrays decoded as UTF-8; bytes that are not valid
     * UTF-8 stay bytes, and a key made of them is rejected). Example:
     * {@code "#payload.orderId"}.
     */
    String key() default "";

    /** How the ledger takes the message; see {@link IdempotencyMode}. */
    IdempotencyMode mode() default IdempotencyMode.AUTO;

    /**
     * How long a lease-mode claim is held without renewal before another consumer may take the
     * message over, as a duration ({@code "30s"}, {@code "5m"}, ISO-8601 {@code "PT5M"}). While the
     * handler runs, its lease is renewed every third of the lease (up to {@link #maxRun()}), so the
     * lease bounds how long a dead JVM blocks the key, not how long the handler may run. Empty: the
     * configured default ({@code sumi.consumer.lease}, 30 seconds).
     */
    String lease() default "";

    /**
     * How long the handler may run with its lease renewed, as a duration ({@code "10m"}). Past it,
     * renewal stops (a WARN and {@code sumi.leases.overruns}), the lease lapses within one lease,
     * and another consumer may take the message over while this handler still runs. Empty: the
     * configured default ({@code sumi.consumer.max-run}, 15 minutes).
     *
     * @since 0.1.0
     */
    String maxRun() default "";

    /** What a reused key with another payload does; see {@link FingerprintMismatchPolicy}. */
    FingerprintMismatchPolicy onFingerprintMismatch() default FingerprintMismatchPolicy.DEFAULT;

    /**
     * The name of the budget ({@code sumi.budgets.<name>}) the handler's calls spend, or empty for
     * none. Budgets are the optional module sumi-budgets (docs/paid-apis.md), which decorates the
     * executor ({@link IdempotentExecutor.Decorator}); the core only carries the name. Each run of
     * the handler is one call: it needs the budget's permission before the ledger is touched, costs
     * {@code cost-per-call} unless the handler records another cost through
     * {@code io.sumi.budget.BudgetPermit.current()}, and counts as a success or failure of the
     * budget's circuit breaker. While the budget is exhausted, messages fail fast with a retryable
     * {@code io.sumi.budget.BudgetExhaustedException} (verdict {@link
     * io.sumi.consumer.exception.Verdict#BUDGET}) and are not acknowledged. A handler bound to a
     * budget on an executor without sumi-budgets' decorator runs unbudgeted.
     *
     * @since 0.1.0
     */
    String budget() default "";

    /**
     * The downstream provider's idempotency-key window, as a duration ({@code "24h"}, as Stripe
     * keeps keys about 24 hours). A lease-mode claim taken over after its message was first claimed
     * longer ago than this is not run again blindly: its outcome is uncertain, so the ledger row is
     * marked {@code RECONCILE} and a {@link ReconciliationRequiredException} is thrown. Empty: the
     * executor's default ({@code sumi.consumer.reconcile-after}); {@code "0s"}: never.
     *
     * @since 0.1.0
     */
    String reconcileAfter() default "";

    /**
     * Whether the method's reply is kept with its ledger row and given again to every duplicate of
     * the message (as AWS Powertools' idempotency does for a Lambda's response). For listeners that
     * answer requests: {@code @KafkaListener} with {@code @SendTo} (and Spring Kafka's
     * {@code ReplyingKafkaTemplate}), {@code @RabbitListener} returning a reply. Without it a
     * duplicate request is skipped and its requester waits for a reply that never comes.
     *
     * <p>The reply is written by the statement (lease mode) or in the transaction (transactional
     * mode) that completes the row, so a completed row of such a handler always has its reply. It
     * is limited to {@code sumi.consumer.reply.max-size} (64 KiB by default); a larger one fails the
     * message with a {@link io.sumi.consumer.exception.ReplyTooLargeException} before anything is
     * completed or sent. A duplicate gets the stored reply with its own correlation id and reply
     * address; a duplicate of a row completed without a reply (before this was set, or the method
     * returned {@code null}) gets none, as without this attribute. A key still running elsewhere is
     * {@code BUSY} and retried as always. Record listeners only (a batch listener that sets it fails
     * at start-up), and not yet on Spring Cloud Stream functions (also refused at start-up). See
     * docs/replies.md.
     *
     * @since 0.1.0
     */
    boolean storeReply() default false;
}
