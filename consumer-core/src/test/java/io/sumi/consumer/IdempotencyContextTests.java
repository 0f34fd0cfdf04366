package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * {@link IdempotencyContext#current()} is set on the handler's thread for exactly the handler's run.
 */
class IdempotencyContextTests extends H2ExecutorTestSupport {

    @Test
    void currentOutsideAHandlerThrows() {
        assertThatIllegalStateException()
                .isThrownBy(IdempotencyContext::current)
                .withMessageContaining("No idempotent handler is running on this thread");
        assertThat(IdempotencyContext.find()).isEmpty();
    }

    @Test
    void currentInsideALeaseHandlerHasItsKeyNamespaceAttemptAndMode() throws Exception {
        HandlerResult<IdempotencyContext> result =
                executor.execute(lease(), message("order-1"), IdempotencyContext::current);

        assertThat(result.value()).isEqualTo(new IdempotencyContext("order-1", consumer, 1, IdempotencyMode.LEASE));
        assertThat(IdempotencyContext.find()).isEmpty();
    }

    @Test
    void currentInsideATransactionalHandlerHasItsKeyNamespaceAttemptAndMode() throws Exception {
        HandlerResult<IdempotencyContext> result =
                executor.execute(transactional(), message("order-1"), IdempotencyContext::current);

        assertThat(result.value())
                .isEqualTo(new IdempotencyContext("order-1", consumer, 1, IdempotencyMode.TRANSACTIONAL));
        assertThat(IdempotencyContext.find()).isEmpty();
    }

    @Test
    void contextIsClearedAfterTheHandlerThrows() {
        assertThatThrownBy(() -> executor.execute(lease(), message("order-1"), () -> {
                    throw new IllegalStateException("boom");
                }))
                .isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> executor.execute(transactional(), message("order-2"), () -> {
                    throw new IllegalStateException("boom");
                }))
                .isInstanceOf(IllegalStateException.class);

        assertThat(IdempotencyContext.find()).isEmpty();
    }

    @Test
    void nestedHandlerRestoresTheOuterContext() throws Exception {
        AtomicReference<String> inner = new AtomicReference<>();
        AtomicReference<String> outerAfterInner = new AtomicReference<>();

        executor.execute(lease(), message("outer"), () -> {
            executor.execute(lease(), message("inner"), () -> {
                inner.set(IdempotencyContext.current().key());
                return null;
            });
            outerAfterInner.set(IdempotencyContext.current().key());
            return null;
        });

        assertThat(inner.get()).isEqualTo("inner");
        assertThat(outerAfterInner.get()).isEqualTo("outer");
        assertThat(IdempotencyContext.find()).isEmpty();
    }

    @Test
    void scopeRestoresThePreviousContext() {
        IdempotencyContext outer = new IdempotencyContext("a", "c", 1, IdempotencyMode.LEASE);
        IdempotencyContext inner = new IdempotencyContext("b", "c", 3, IdempotencyMode.TRANSACTIONAL);

        try (CurrentIdempotencyContext.Scope outerScope = CurrentIdempotencyContext.open(outer)) {
            try (CurrentIdempotencyContext.Scope innerScope = CurrentIdempotencyContext.open(inner)) {
                assertThat(IdempotencyContext.current()).isEqualTo(inner);
            }
            assertThat(IdempotencyContext.current()).isEqualTo(outer);
        }
        assertThat(IdempotencyContext.find()).isEmpty();
    }

    @Test
    void aContextBuiltByHandCannotBeMadeCurrentThroughTheApi() {
        new IdempotencyContext("forged", "c", 1, IdempotencyMode.LEASE);

        assertThat(IdempotencyContext.find()).isEmpty();
        // The public surface reads the context and nothing else: no opener, no nested scope type.
        assertThat(Arrays.stream(IdempotencyContext.class.getDeclaredMethods())
                        .filter(method -> Modifier.isPublic(method.getModifiers()))
                        .map(Method::getName))
                .containsExactlyInAnyOrder(
                        "current", "find", "key", "consumer", "attempt", "mode", "equals", "hashCode", "toString");
        assertThat(IdempotencyContext.class.getDeclaredClasses()).isEmpty();
    }

    @Test
    void batchHandlersRunWithoutAContext() throws Exception {
        AtomicReference<Optional<IdempotencyContext>> seen = new AtomicReference<>();

        executor.executeBatch(
                lease(), List.of(message("a"), message("b")), indexes -> seen.set(IdempotencyContext.find()));

        assertThat(seen.get()).isEmpty();
    }
}
