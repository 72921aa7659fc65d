/* cfr.c MODE BASE REPS [x]: writing REPS pairs of 3584 rows of 75776 bytes (Qwen2-7B's gate and up
 * weights) from CFR_IN (default the Qwen2 model) at offset BASE into a new file CFR_OUT, interleaved
 * row by row as concat_weights' output is, + fsync; CPU s. x: a 3-byte header first (the output's
 * offsets then differ from the input's within a page). MODE 1: copy_file_range per row and part
 * (what export does); 2: pread into an 8 MiB buffer + write; 3: one copy_file_range of the same
 * bytes contiguous; 4/5: writev from the mapping (5: MADV_POPULATE_READ first); 6/7: write()
 * contiguous from the mapping 8 MiB at a time (7: populated first). bench/README.md, "Issue 20,
 * real size: folds streamed to the output". */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/uio.h>
static double cpu(void){struct rusage r;getrusage(RUSAGE_SELF,&r);return r.ru_utime.tv_sec+r.ru_stime.tv_sec+(r.ru_utime.tv_usec+r.ru_stime.tv_usec)/1e6;}
int main(int argc,char**argv){
  int mode=atoi(argv[1]); size_t width=75776, rows=3584; off_t base=atol(argv[2]); int reps=atoi(argv[3]);
  const char*ip=getenv("CFR_IN")?getenv("CFR_IN"):"/tmp/fuserule-weights/qwen2.onnx",*op=getenv("CFR_OUT")?getenv("CFR_OUT"):"/tmp/cfr.out";
  int in=open(ip,O_RDONLY);
  unlink(op);
  int out=open(op,O_WRONLY|O_CREAT|O_TRUNC,0644);
  if(argc>4) write(out,"hdr",3);
  double c0=cpu(); size_t total=0;
  size_t cap=8<<20; char*buf=malloc(cap); size_t used=0;
  for(int rep=0;rep<reps;rep++){ off_t b=base+(off_t)rep*2*rows*width;
  if(mode==3){ loff_t at=b; size_t len=2*rows*width; while(len){ssize_t n=copy_file_range(in,&at,out,NULL,len,0); if(n<=0){perror("cfr");return 1;} len-=n; total+=n;} continue;}
  if(mode==6||mode==7){ static unsigned char*m6; if(!m6){struct stat st; fstat(in,&st); m6=mmap(NULL,st.st_size,PROT_READ,MAP_PRIVATE,in,0);}
    size_t len=2*rows*width; for(size_t at=0;at<len;at+=8<<20){size_t n=len-at<(8<<20)?len-at:(8<<20); unsigned char*p=m6+b+at;
      uintptr_t lo=(uintptr_t)p&~4095UL, hi=((uintptr_t)p+n+4095)&~4095UL;
      if(mode==7) madvise((void*)lo,hi-lo,MADV_POPULATE_READ);
      if(write(out,p,n)!=(ssize_t)n){perror("w");return 1;} madvise((void*)lo,hi-lo,MADV_DONTNEED); total+=n;}
    continue; }
  if(mode>=4){ static unsigned char*m; static size_t mlen; if(!m){struct stat st; fstat(in,&st); mlen=st.st_size; m=mmap(NULL,mlen,PROT_READ,MAP_PRIVATE,in,0);}
    struct iovec iov[1024]; int nv=0;
    for(size_t r=0;r<rows;r++) for(int p=0;p<2;p++){ off_t src=b+(off_t)p*rows*width+(off_t)r*width;
      iov[nv].iov_base=m+src; iov[nv].iov_len=width; nv++; total+=width;
      if(nv==1024 || (r==rows-1&&p==1)){ if(mode==5) { /* populate ranges */ for(int i=0;i<nv;i++) madvise((void*)((uintptr_t)iov[i].iov_base&~4095UL), width+4096, MADV_POPULATE_READ);} 
        ssize_t w=writev(out,iov,nv); if(w<0){perror("writev");return 1;}
        for(int i=0;i<nv;i++) madvise((void*)((uintptr_t)iov[i].iov_base&~4095UL), width, MADV_DONTNEED);
        nv=0;} }
    continue; }
  for(size_t r=0;r<rows;r++) for(int p=0;p<2;p++){
    off_t src=b+(off_t)p*rows*width+(off_t)r*width;
    if(mode==1){loff_t at=src; size_t len=width; while(len){ssize_t n=copy_file_range(in,&at,out,NULL,len,0); if(n<=0){perror("cfr");return 1;} len-=n;} }
    else { if(used+width>cap){write(out,buf,used);used=0;} pread(in,buf+used,width,src); used+=width; }
    total+=width; } }
  if(used) write(out,buf,used);
  double c1=cpu(); fsync(out); double c2=cpu();
  printf("mode %d: %zu MB, cpu %.3f + fsync %.3f\n",mode,total>>20,c1-c0,c2-c1);
  close(out); unlink(op);
}
