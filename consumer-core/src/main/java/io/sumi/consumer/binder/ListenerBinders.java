package io.sumi.consumer.binder;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * The binders registered on the class path, and which of them owns an {@code @IdempotentHandler}
 * method. The rule, the same for every binder: the one binder that {@linkplain ListenerBinder#guards
 * guards} the method owns it; if none does, the binder that {@linkplain
 * ListenerBinder#takesUnclaimedMethods takes unclaimed methods} owns it (if it is there); if two
 * guard it, the method is ambiguous and start-up fails. Thread-safe; the registered binders are
 * loaded once.
 *
 * @since 0.1.0
 */
public final class ListenerBinders {

    private static final class Installed {
        // Loaded on first use: a class loader that is not ready when this class is (an IDE, a test
        // runner) still sees every binder.
        static final ListenerBinders INSTANCE = load(ListenerBinders.class.getClassLoader());
    }

    private final List<ListenerBinder> binders;

    private ListenerBinders(List<ListenerBinder> binders) {
        this.binders = List.copyOf(binders);
        long fallbacks =
                binders.stream().filter(ListenerBinder::takesUnclaimedMethods).count();
        if (fallbacks > 1) {
            throw new IllegalStateException("More than one Sumi binder takes unclaimed @IdempotentHandler methods: "
                    + names(binders.stream()
                            .filter(ListenerBinder::takesUnclaimedMethods)
                            .toList()));
        }
    }

    /** The binders registered with {@link ServiceLoader} on Sumi's class path. */
    public static ListenerBinders installed() {
        return Installed.INSTANCE;
    }

    /** Exactly these binders (tests, or an application that assembles Sumi by hand). */
    public static ListenerBinders of(ListenerBinder... binders) {
        return new ListenerBinders(List.of(binders));
    }

    /**
     * The binders registered in {@code classLoader}. A binder whose framework is missing (its
     * classes fail to link) is left out.
     */
    public static ListenerBinders load(@Nullable ClassLoader classLoader) {
        List<ListenerBinder> found = new ArrayList<>();
        ServiceLoader<ListenerBinder> loader = ServiceLoader.load(ListenerBinder.class, classLoader);
        for (ServiceLoader.Provider<ListenerBinder> provider : loader.stream().toList()) {
            try {
                ListenerBinder binder = provider.get();
                // Touches the framework's classes once, so that a binder without its framework is
                // left out here rather than failing a pointcut later.
                binder.guards(Object.class.getMethod("toString"), Object.class);
                found.add(binder);
            } catch (ServiceConfigurationError | LinkageError | ReflectiveOperationException ex) {
                // The binder's framework is not on the class path: it guards nothing.
            }
        }
        return new ListenerBinders(found);
    }

    /** The binders, in registration order. */
    public List<ListenerBinder> binders() {
        return binders;
    }

    /**
     * The binder that owns {@code method}, found on {@code targetClass}, or empty if none does.
     *
     * @throws IllegalStateException if more than one binder guards it, naming them
     */
    public Optional<ListenerBinder> owner(Method method, Class<?> targetClass) {
        List<ListenerBinder> guarding = binders.stream()
                .filter(binder -> binder.guards(method, targetClass))
                .toList();
        if (guarding.size() > 1) {
            throw new IllegalStateException(
                    "@IdempotentHandler method " + targetClass.getName() + "." + method.getName()
                            + " is a listener of several frameworks (" + names(guarding)
                            + "), so Sumi cannot tell which message it guards: give it one listener annotation and one message"
                            + " parameter type");
        }
        if (guarding.size() == 1) {
            return Optional.of(guarding.get(0));
        }
        return binders.stream().filter(ListenerBinder::takesUnclaimedMethods).findFirst();
    }

    /** Whether {@code binder} (compared by class) owns {@code method}, found on {@code targetClass}. */
    public boolean owns(Class<? extends ListenerBinder> binder, Method method, Class<?> targetClass) {
        return owner(method, targetClass).filter(binder::isInstance).isPresent();
    }

    private static String names(List<ListenerBinder> binders) {
        return binders.stream().map(ListenerBinder::name).collect(Collectors.joining(", "));
    }
}
