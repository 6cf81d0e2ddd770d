"""gatelab's SLURM launcher (``hydra/launcher=cluster``). Hydra takes launchers only from the
``hydra_plugins`` namespace, so the class lives here; the check it adds is in :mod:`gatelab.launch.slurm`."""
try:
    from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher as _SubmititSlurm
except ImportError:  # hydra-submitit-launcher absent: `pip install -e '.[cluster]'`
    _SubmititSlurm = None

if _SubmititSlurm is not None:
    class SlurmLauncher(_SubmititSlurm):
        """hydra-submitit-launcher's SLURM launcher, which first checks that some node of the
        partition can hold one job as requested (:func:`gatelab.launch.slurm.check_request`), and reports
        a job that ends without a result instead of stopping the sweep
        (:func:`gatelab.launch.slurm.report_unfinished_jobs`)."""

        def launch(self, job_overrides, initial_job_idx):
            from gatelab.launch.slurm import check_request, cluster_nodes, report_unfinished_jobs

            check_request(self.params, cluster_nodes(self.params.get("partition")))
            with report_unfinished_jobs(str(self.config.out_root)):
                return super().launch(job_overrides, initial_job_idx)
