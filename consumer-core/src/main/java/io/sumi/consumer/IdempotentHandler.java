package io.sumi.consumer;

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
     * {@code #headers} (a map of header values, byte arrays decoded as UTF-8). Example:
     * {@code "#payload.orderId"}.
     */
    String key() default "";

    /** How the ledger takes the message; see {@link IdempotencyMode}. */
    IdempotencyMode mode() default IdempotencyMode.AUTO;

    /**
     * How long a lease-mode claim is held before another consumer may take the message over, as a
     * duration ({@code "30s"}, {@code "5m"}, ISO-8601 {@code "PT5M"}). Empty: the configured
     * default ({@code sumi.consumer.lease}, 5 minutes). Must exceed the handler's longest run.
     */
    String lease() default "";

    /** What a reused key with another payload does; see {@link FingerprintMismatchPolicy}. */
    FingerprintMismatchPolicy onFingerprintMismatch() default FingerprintMismatchPolicy.DEFAULT;
}
