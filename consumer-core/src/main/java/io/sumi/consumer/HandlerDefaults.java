package io.sumi.consumer;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.util.ClassUtils;

/**
 * What an {@link IdempotentHandler} attribute left at its default means ({@code sumi.consumer.*}
 * in the starter), and how an annotation becomes a {@link HandlerDefinition}. Binders share it,
 * so an annotation means the same on every broker.
 *
 * @param mode the mode of handlers whose annotation says {@code AUTO} (itself {@code AUTO} unless configured)
 * @param lease the lease of handlers that set none
 * @param fingerprintPolicy the policy of handlers that say {@code DEFAULT}
 * @param keyHeaders the headers tried for the key, in order
 * @param maxReplySize the largest reply a handler that keeps replies may keep, in bytes
 *     ({@code sumi.consumer.reply.max-size}; since 0.1.0)
 */
public record HandlerDefaults(
        IdempotencyMode mode,
        Duration lease,
        FingerprintMismatchPolicy fingerprintPolicy,
        List<String> keyHeaders,
        int maxReplySize) {

    public HandlerDefaults {
        if (fingerprintPolicy == FingerprintMismatchPolicy.DEFAULT) {
            fingerprintPolicy = FingerprintMismatchPolicy.WARN;
        }
        keyHeaders = List.copyOf(keyHeaders);
        if (maxReplySize <= 0) {
            throw new IllegalArgumentException("The max reply size must be positive, was " + maxReplySize);
        }
    }

    /** Defaults with the default max reply size ({@link HandlerDefinition#DEFAULT_MAX_REPLY_SIZE}). */
    public HandlerDefaults(
            IdempotencyMode mode,
            Duration lease,
            FingerprintMismatchPolicy fingerprintPolicy,
            List<String> keyHeaders) {
        this(mode, lease, fingerprintPolicy, keyHeaders, HandlerDefinition.DEFAULT_MAX_REPLY_SIZE);
    }

    /** The library defaults: {@code AUTO}, a 30 second lease, {@code WARN}, headers {@code outbox-id} then {@code idempotency-key}. */
    public static HandlerDefaults standard() {
        return new HandlerDefaults(
                IdempotencyMode.AUTO,
                HandlerDefinition.DEFAULT_LEASE,
                FingerprintMismatchPolicy.WARN,
                HandlerDefinition.DEFAULT_KEY_HEADERS);
    }

    /**
     * The definition of the {@link IdempotentHandler} method {@code method} of a listener bean:
     * its annotation completed by these defaults, the consumer name defaulting to
     * {@code listenerId} (the listener annotation's id, when it has one), else
     * {@code Class.method}; the method's or class's {@code @Transactional} taken into account as
     * {@link #resolve(IdempotentHandler, String, String, String)} says. Every listener binder
     * resolves its methods with this, so an annotation means the same on every broker.
     *
     * @param targetClass the class of the bean the method is called on (may be a subclass of the declaring class)
     * @param listenerId the id of the method's listener annotation, or {@code null} or blank for none
     * @throws IllegalStateException if {@code method} has no {@code @IdempotentHandler}
     * @throws IllegalArgumentException if the annotation is invalid (see {@link #resolve(IdempotentHandler, String, String, String)})
     * @since 0.1.0
     */
    public HandlerDefinition resolve(Method method, Class<?> targetClass, @Nullable String listenerId) {
        IdempotentHandler annotation = AnnotatedElementUtils.findMergedAnnotation(method, IdempotentHandler.class);
        if (annotation == null) {
            throw new IllegalStateException("Not an @IdempotentHandler method: " + method);
        }
        String defaultConsumer = listenerId != null && !listenerId.isBlank()
                ? listenerId
                : ClassUtils.getUserClass(targetClass).getSimpleName() + "." + method.getName();
        // The method's own transaction may start inside Sumi's advice; AUTO must still mean
        // "in the handler's transaction". One that names its manager may not be the ledger's.
        Transactional transactional = AnnotatedElementUtils.findMergedAnnotation(method, Transactional.class);
        if (transactional == null) {
            transactional = AnnotatedElementUtils.findMergedAnnotation(targetClass, Transactional.class);
        }
        return resolve(
                annotation,
                defaultConsumer,
                transactional == null ? null : transactional.transactionManager(),
                method.toString());
    }

    /**
     * The definition of a handler annotated with {@code annotation}.
     *
     * @param defaultConsumer the namespace when the annotation names none (listener id or bean method)
     * @param transactionalHint whether the handler runs in a transaction of its own
     *     ({@code @Transactional}), which makes {@code AUTO} mean {@code TRANSACTIONAL} even when
     *     that transaction starts after Sumi's claim would
     * @param where names the handler in error messages
     * @throws IllegalArgumentException if the annotation has an invalid lease, reconcile-after window or consumer
     */
    public HandlerDefinition resolve(
            IdempotentHandler annotation, String defaultConsumer, boolean transactionalHint, String where) {
        return resolve(annotation, defaultConsumer, transactionalHint ? "" : null, where);
    }

    /**
     * The definition of a handler annotated with {@code annotation}, given its own
     * {@code @Transactional}, if any.
     *
     * <p>A {@code @Transactional} of the default transaction manager ({@code ""}) makes
     * {@code AUTO} mean {@code TRANSACTIONAL}, even when that transaction starts after Sumi's claim
     * would. One that names a transaction manager may be a transaction of another resource (a
     * Kafka-only manager, another DataSource), in which a ledger row would commit on its own: there
     * {@code AUTO} means {@code LEASE}, and {@code TRANSACTIONAL} is refused.
     *
     * @param transactionManager the transaction manager the handler's {@code @Transactional} names
     *     ({@code ""}: the default one), or {@code null} if the handler is not {@code @Transactional}
     * @throws IllegalArgumentException if the annotation has an invalid lease, max run time,
     *     reconcile-after window or consumer, or asks for {@code TRANSACTIONAL} with a named transaction manager
     * @since 0.1.0
     */
    public HandlerDefinition resolve(
            IdempotentHandler annotation, String defaultConsumer, @Nullable String transactionManager, String where) {
        String consumer = annotation.consumer().isBlank() ? defaultConsumer : annotation.consumer();
        IdempotencyMode resolvedMode = annotation.mode() != IdempotencyMode.AUTO ? annotation.mode() : mode;
        boolean namedManager = transactionManager != null && !transactionManager.isBlank();
        if (namedManager && resolvedMode == IdempotencyMode.TRANSACTIONAL) {
            throw new IllegalArgumentException(
                    "@IdempotentHandler on " + where + " asks for transactional mode, but its"
                            + " @Transactional names the transaction manager '" + transactionManager
                            + "': Sumi cannot tell whether the"
                            + " ledger's DataSource takes part in that transaction, and a ledger row outside it would commit on its own."
                            + " Use @IdempotentHandler(mode = LEASE), or let @Transactional use the default transaction manager (the"
                            + " ledger's DataSource)");
        }
        if (resolvedMode == IdempotencyMode.AUTO && transactionManager != null) {
            resolvedMode = namedManager ? IdempotencyMode.LEASE : IdempotencyMode.TRANSACTIONAL;
        }
        return HandlerDefinition.builder(consumer)
                .mode(resolvedMode)
                .lease(
                        annotation.lease().isBlank()
                                ? lease
                                : Durations.parse(annotation.lease(), "lease of @IdempotentHandler on " + where))
                .fingerprintPolicy(
                        annotation.onFingerprintMismatch() == FingerprintMismatchPolicy.DEFAULT
                                ? fingerprintPolicy
                                : annotation.onFingerprintMismatch())
                .keyHeaders(keyHeaders)
                .keyExpression(annotation.key())
                .budget(annotation.budget())
                .reconcileAfter(
                        annotation.reconcileAfter().isBlank()
                                ? null
                                : Durations.parse(
                                        annotation.reconcileAfter(),
                                        "reconcileAfter of @IdempotentHandler on " + where))
                .maxRun(
                        annotation.maxRun().isBlank()
                                ? null
                                : Durations.parse(annotation.maxRun(), "maxRun of @IdempotentHandler on " + where))
                .storeReply(annotation.storeReply())
                .maxReplySize(maxReplySize)
                .build();
    }
}
