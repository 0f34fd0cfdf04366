package io.sumi.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.Dependency;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;

/**
 * The rules Sumi's own code follows, written once and run both on Sumi's main classes ({@link
 * SumiArchitectureTests}) and on violating fixtures ({@link ArchitectureRulesFixtureTests}), so a
 * rule that silently stops detecting anything fails its fixture test.
 */
final class ArchitectureRules {

    private ArchitectureRules() {}

    /** Every package under {@code rootPackage} is a slice; no slice may reach itself through others. */
    static ArchRule noPackageCycles(String rootPackage) {
        return slices().matching(rootPackage + ".(**)")
                .namingSlices("$1")
                .as("packages under " + rootPackage)
                .should()
                .beFreeOfCycles();
    }

    /**
     * A class in an {@code internal} package is used only by classes of its own module, or by a
     * module that the allow-list names with that package. Every class must belong to a module.
     *
     * @param moduleOf the module of a class, empty if the class is not one of the checked modules'
     * @param allowList module → the other modules' internal packages it may use
     */
    static ArchRule internalPackagesStayInTheirModule(
            Function<JavaClass, Optional<String>> moduleOf, Map<String, Set<String>> allowList) {
        return classes()
                .should(new ArchCondition<JavaClass>("use other modules' internal packages only as allow-listed") {
                    @Override
                    public void check(JavaClass origin, ConditionEvents events) {
                        Optional<String> originModule = moduleOf.apply(origin);
                        if (originModule.isEmpty()) {
                            events.add(SimpleConditionEvent.violated(
                                    origin, origin.getName() + " belongs to no declared module"));
                            return;
                        }
                        Set<String> allowed = allowList.getOrDefault(originModule.get(), Set.of());
                        for (Dependency dependency : origin.getDirectDependenciesFromSelf()) {
                            JavaClass target = dependency.getTargetClass().getBaseComponentType();
                            String targetPackage = target.getPackageName();
                            if (!isInternal(targetPackage)) {
                                continue;
                            }
                            Optional<String> targetModule = moduleOf.apply(target);
                            // Another library's internals are not this rule's business.
                            if (targetModule.isEmpty()
                                    || targetModule.equals(originModule)
                                    || allowed.contains(targetPackage)) {
                                continue;
                            }
                            events.add(SimpleConditionEvent.violated(
                                    dependency,
                                    originModule.get() + " uses " + targetModule.get() + "'s " + targetPackage
                                            + " without an allow-list entry: " + dependency.getDescription()));
                        }
                    }
                })
                .as("internal packages are used only by their own module or an allow-listed one");
    }

    /** Only classes in {@code allowedPackages} (ArchUnit package identifiers) may depend on Spring Boot. */
    static ArchRule springBootOnlyIn(String... allowedPackages) {
        return noClasses()
                .that()
                .resideOutsideOfPackages(allowedPackages)
                .should()
                .dependOnClassesThat()
                .resideInAPackage("org.springframework.boot..")
                .as("only " + String.join(", ", allowedPackages) + " depend on Spring Boot");
    }

    static boolean isInternal(String packageName) {
        return packageName.endsWith(".internal") || packageName.contains(".internal.");
    }
}
